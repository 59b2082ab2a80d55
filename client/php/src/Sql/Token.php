<?php

declare(strict_types=1);

namespace Lagwatch\Router\Sql;

/** A token of SQL text: a word (lower case), or a single punctuation character, or a literal. */
final class Token
{
    public const WORD = 1;
    public const PUNCT = 2;
    /** A string literal or a quoted identifier: something, but never a keyword. */
    public const QUOTED = 3;

    public function __construct(public readonly int $type, public readonly string $text)
    {
    }

    public function isWord(string $word): bool
    {
        return $this->type === self::WORD && $this->text === $word;
    }
}
