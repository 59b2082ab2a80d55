<?php

declare(strict_types=1);

namespace Lagwatch\Router\Contract;

/** A replica's `state` (docs/measurement.md#states), spelled as published. */
enum ReplicaState: string
{
    case Ok = 'ok';
    case Lagging = 'lagging';
    case Stopped = 'stopped';
    case Unreachable = 'unreachable';
    case Unverified = 'unverified';
    case PrimaryUnknown = 'primary_unknown';
    case Disabled = 'disabled';
}
