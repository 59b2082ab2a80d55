<?php

declare(strict_types=1);

namespace Lagwatch\Router\Laravel;

use Closure;
use Illuminate\Database\DatabaseManager;

/**
 * Middleware, after StartSession: each lagwatch connection opened so far reads the session's
 * read-your-writes state from its token store again (a connection that ran a statement before the
 * session started found nothing there). Connections opened later read it at their first statement.
 */
class LoadReadYourWrites
{
    public function __construct(private readonly DatabaseManager $db)
    {
    }

    public function handle($request, Closure $next)
    {
        foreach ($this->db->getConnections() as $connection) {
            if ($connection instanceof LagwatchMySqlConnection) {
                $connection->loadSession();
            }
        }
        return $next($request);
    }
}
