<?php

declare(strict_types=1);

namespace Lagwatch\Router\Tests\Laravel;

use Illuminate\Database\Eloquent\Model;

/** An Eloquent model on lwtest.lv_items, unchanged by the integration. */
final class Item extends Model
{
    protected $table = 'lv_items';
    public $timestamps = false;
    protected $fillable = ['name', 'version'];
}
