<?php

declare(strict_types=1);

namespace Lagwatch\Router\Sql;

/**
 * A small SQL tokenizer, as the server reads text (client/sql_classify.cc): it skips comments
 * (`-- ` with a space or control byte after the dashes, `#` to the end of the line, `/* ... * /`)
 * and literals ('...', "...", `...`, with doubled quotes and, but in backticks, backslash
 * escapes), and reads the inside of the executable comments `/*! ... * /` and `/*M! ... * /`,
 * which the server runs. Unterminated comments and literals end the text. In the same pass it
 * builds the fingerprint: the text with string and number literals replaced by `?`, comments
 * dropped and whitespace collapsed.
 *
 * Pure; never fails.
 */
final class Lexer
{
    private const SPACE = " \t\n\r\f\v";
    private const WORD_BYTES = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$';

    /** @var list<Token> */
    private array $tokens = [];
    private string $fingerprint = '';
    private bool $pendingSpace = false;

    private function __construct(private readonly string $s)
    {
    }

    /** @return array{list<Token>, string} the tokens and the fingerprint */
    public static function scan(string $sql): array
    {
        $lexer = new self($sql);
        $lexer->run();
        return [$lexer->tokens, $lexer->fingerprint];
    }

    private static function isWordByte(string $c): bool
    {
        return $c !== '' && (strspn($c, self::WORD_BYTES) === 1 || ord($c) >= 0x80);
    }

    private static function isDigit(string $c): bool
    {
        return $c !== '' && strspn($c, '0123456789') === 1;
    }

    private function emit(string $text): void
    {
        if ($this->pendingSpace && $this->fingerprint !== '') {
            $this->fingerprint .= ' ';
        }
        $this->pendingSpace = false;
        $this->fingerprint .= $text;
    }

    private function run(): void
    {
        $s = $this->s;
        $n = strlen($s);
        $executable = 0;  // inside /*! ... */: the text is code, its */ is not
        $i = 0;
        while ($i < $n) {
            $c = $s[$i];
            $next = $s[$i + 1] ?? '';
            if (strpos(self::SPACE, $c) !== false) {
                $this->pendingSpace = true;
                ++$i;
            } elseif (
                $c === '#'
                || ($c === '-' && $next === '-' && ($i + 2 >= $n || ord($s[$i + 2]) <= 0x20))
            ) {
                $end = strpos($s, "\n", $i);
                $i = $end === false ? $n : $end;
                $this->pendingSpace = true;
            } elseif ($c === '/' && $next === '*') {
                $bang = ($s[$i + 2] ?? '') === '!';
                $mariadbBang = substr($s, $i + 2, 2) === 'M!';
                if ($bang || $mariadbBang) {
                    $i += $bang ? 3 : 4;
                    while ($i < $n && self::isDigit($s[$i])) {
                        ++$i;  // the version: /*!50001 ... */
                    }
                    ++$executable;
                } else {
                    $end = strpos($s, '*/', $i + 2);
                    $i = $end === false ? $n : $end + 2;
                }
                $this->pendingSpace = true;
            } elseif ($c === '*' && $next === '/' && $executable > 0) {
                --$executable;
                $i += 2;
                $this->pendingSpace = true;
            } elseif ($c === "'" || $c === '"' || $c === '`') {
                $end = self::skipQuoted($s, $i, $c);
                // A quoted identifier is still something, e.g. between FOR and UPDATE.
                $this->tokens[] = new Token(Token::QUOTED, $c);
                $this->emit($c === '`' ? substr($s, $i, $end - $i) : '?');
                $i = $end;
            } elseif (self::isWordByte($c)) {
                $j = $i;
                while ($j < $n && self::isWordByte($s[$j])) {
                    ++$j;
                }
                $number = self::numberEnd($s, $i);
                if ($number !== null) {
                    $this->tokens[] = new Token(Token::WORD, strtolower(substr($s, $i, $number - $i)));
                    $this->emit('?');
                    $i = $number;
                } else {
                    $this->tokens[] = new Token(Token::WORD, strtolower(substr($s, $i, $j - $i)));
                    $this->emit(substr($s, $i, $j - $i));
                    $i = $j;
                }
            } else {
                $this->tokens[] = new Token(Token::PUNCT, $c);
                $this->emit($c);
                ++$i;
            }
        }
    }

    /**
     * Where a number literal starting at $i ends (decimal with an optional fraction and exponent,
     * 0x hex, 0b binary), or null when the word there is not one (an identifier such as `1t`).
     */
    private static function numberEnd(string $s, int $i): ?int
    {
        if (!self::isDigit($s[$i])) {
            return null;
        }
        if (preg_match('/\G(?:0x[0-9a-fA-F]+|0b[01]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)/', $s, $m, 0, $i) !== 1) {
            return null;
        }
        $end = $i + strlen($m[0]);
        return self::isWordByte($s[$end] ?? '') ? null : $end;
    }

    /**
     * The index after the literal that opens with $quote at $i (the end of the text when it never
     * closes). A doubled quote stands for itself; in '...' and "..." so does an escaped one.
     */
    private static function skipQuoted(string $s, int $i, string $quote): int
    {
        $n = strlen($s);
        for (++$i; $i < $n; ++$i) {
            if ($s[$i] === '\\' && $quote !== '`') {
                ++$i;
            } elseif ($s[$i] === $quote) {
                if ($i + 1 < $n && $s[$i + 1] === $quote) {
                    ++$i;
                } else {
                    return $i + 1;
                }
            }
        }
        return $n;
    }
}
