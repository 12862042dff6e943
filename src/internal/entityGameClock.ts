/**
 * The state behind a `GameClock`: the time-skip offset and the registry of pending absolute one-shots.
 *
 * Absolute one-shots are armed on the system's timer engine at `deadline - offset` (engine time). A skip moves the
 * offset forward and re-arms every registered one-shot at its new engine due time; the driver wakes by itself for an
 * entry that moved earlier than the one it sleeps toward, so a skip past a deadline fires it on the driver's next
 * turn instead of after the old real-time delay.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** A timer that follows the game clock: re-armed when the offset moves. */
export interface GameTimer {
  rearm(offsetMillis: number): void
}

export class GameClockState {
  offsetMillis = 0
  readonly timers = new Set<GameTimer>()

  constructor(readonly clock: Clock.Clock) {}

  /** Game time through this state's own clock. */
  now(): number {
    return this.clock.unsafeCurrentTimeMillis() + this.offsetMillis
  }

  /** Moves the offset forward by `millis` (>= 0, checked by the caller) and re-arms the game timers. */
  advance(millis: number): void {
    if (millis <= 0) return
    this.offsetMillis += millis
    for (const timer of Array.from(this.timers)) timer.rearm(this.offsetMillis)
  }
}

/** The key of the public `GameClock` tag; looked up here by key so that this module does not import the public one. */
export const GameClockKey = "tickwork/GameClock"

const GameClockTag = Context.GenericTag<object, object>(GameClockKey)

const states = new WeakMap<object, GameClockState>()

/** Links a public service object to its state. */
export const register = <S extends object>(service: S, state: GameClockState): S => {
  states.set(service, state)
  return service
}

/** The state of the provided `GameClock`, if any. */
export const currentState: Effect.Effect<Option.Option<GameClockState>> = Effect.map(
  Effect.serviceOption(GameClockTag),
  Option.flatMap((service) => Option.fromNullable(states.get(service)))
)

/** Game time: the provided `GameClock`, or `Clock` when there is none. */
export const currentGameTimeMillis: Effect.Effect<number> = Effect.flatMap(currentState, (state) =>
  Option.isSome(state) ? Effect.sync(() => state.value.now()) : Clock.currentTimeMillis
)
