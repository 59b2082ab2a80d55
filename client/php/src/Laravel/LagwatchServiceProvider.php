<?php

declare(strict_types=1);

namespace Lagwatch\Router\Laravel;

use Illuminate\Support\ServiceProvider;

/**
 * Enables the integration in a Laravel application (config/app.php `providers`): every `mysql`
 * connection whose config has a `lagwatch` block becomes a LagwatchMySqlConnection. Add
 * LoadReadYourWrites after StartSession in the `web` middleware group when the session's token
 * is kept in Laravel's session and queries may run before the session starts.
 */
class LagwatchServiceProvider extends ServiceProvider
{
    public function register()
    {
        Lagwatch::install($this->app);
    }
}
