import { Counter, Gauge, type Registry } from 'prom-client';

/** What the events hub counts about itself (src/tasks/events/hub.ts). */
export interface EventHubStats {
  readonly cacheStats: { hits: number; misses: number; size: number };
  readonly watchedCount: number;
}

/**
 * The event hub's series: how often a poll was answered from the row cache (no query), the
 * cache's size, and how many tasks this process watches for subscribers and running handlers.
 * A falling hit ratio under steady polling means the listening connection keeps dropping
 * (the cache serves only while it is up) or the cache is too small for the working set.
 */
export function registerEventHubSeries(registry: Registry, hub: EventHubStats): void {
  const registers = [registry];
  // Counters that follow the hub's own running totals: each scrape adds what grew since the last.
  const follow = (name: string, help: string, read: () => number) => {
    let seen = 0;
    new Counter({
      name,
      help,
      registers,
      collect() {
        const now = read();
        if (now > seen) this.inc(now - seen);
        seen = now;
      },
    });
  };
  follow('taskhandle_row_cache_hits_total', 'Task reads answered from the row cache', () => {
    return hub.cacheStats.hits;
  });
  follow('taskhandle_row_cache_misses_total', 'Task reads that went to the database', () => {
    return hub.cacheStats.misses;
  });
  new Gauge({
    name: 'taskhandle_row_cache_rows',
    help: 'Rows held in the row cache',
    registers,
    collect() {
      this.set(hub.cacheStats.size);
    },
  });
  new Gauge({
    name: 'taskhandle_watched_tasks',
    help: 'Tasks this process watches for change events (subscribers, running handlers)',
    registers,
    collect() {
      this.set(hub.watchedCount);
    },
  });
}
