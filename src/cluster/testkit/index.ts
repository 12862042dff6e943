/**
 * The cluster's testkit: `TestCluster`. Imported as `tickwork/cluster/testkit`; like `tickwork/cluster` it needs the
 * cluster's peer packages, which `tickwork/testkit` never loads.
 *
 * @since 0.1.0
 */

/**
 * A test's system with an in-process cluster runner in one line; reminders fired on demand; time that moves to the
 * next cluster delivery.
 *
 * @since 0.1.0
 */
export * as TestCluster from "./TestCluster.js"
