/**
 * tickwork on `@effect/cluster`: grains as cluster entities, cluster-wide cron and durable reminders.
 * Imported as `tickwork/cluster`; nothing in the single-process library imports this folder.
 *
 * @since 0.2.0
 */
export {}
