import type * as MetricLabel from "effect/MetricLabel"
import { type DropReason, type TimerKind, tickLateness, ticksDelivered, ticksDropped } from "../Metrics.js"

/** One shared empty tag array: Effect caches a metric's hook per tag-array identity. */
const NO_TAGS: ReadonlyArray<MetricLabel.MetricLabel> = []

export const recordDelivered = (kind: TimerKind): void => ticksDelivered(kind).unsafeUpdate(1, NO_TAGS)
export const recordDropped = (reason: DropReason): void => ticksDropped(reason).unsafeUpdate(1, NO_TAGS)
export const recordLateness = (millis: number): void => tickLateness.unsafeUpdate(millis, NO_TAGS)
