<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

/** The pointer and the primary's key, validated. Immutable. */
final class PrimaryInfo
{
    /**
     * @param string $id "host:port" from the pointer; '' when unknown
     * @param string $topology "ok", "unknown", "ambiguous"; '' when unknown
     * @param bool $keyValid the primary's key was read and valid (the fields after it come from it)
     */
    public function __construct(
        public readonly string $id = '',
        public readonly Circuit $circuit = Circuit::Unknown,
        public readonly string $topology = '',
        public readonly bool $keyValid = false,
        public readonly bool $readOnly = false,
        public readonly int $lastWriteMs = 0,
        public readonly int $consecutiveFailures = 0,
    ) {
    }
}
