<?php

declare(strict_types=1);

namespace Lagwatch\Router\Routing;

enum Target: string
{
    /** Read from the decision's replica. */
    case Replica = 'replica';
    /**
     * Ask the decision's replica, without waiting, whether it has the session's token; read there
     * if it answers "reached", else go to the decision's fallback.
     */
    case AskReplica = 'ask_replica';
    case Primary = 'primary';
    /** Do not send the statement: there is nowhere safe for it. */
    case FailFast = 'fail_fast';
}
