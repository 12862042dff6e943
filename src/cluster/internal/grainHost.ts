/**
 * The host of cluster grains on a runner, and the client side of tell and ask.
 *
 * Each grain kind is an entity. When the cluster starts an entity (kind, key) on this runner, its handlers forward
 * every message to one local activation of the grain, run by the single-process grain runtime (`GrainRegistry`) on
 * the runner's `ActorSystem`: the grain code, its timers and their semantics are the single-process ones, and the
 * cluster contributes placement (one owner per identity), idle passivation and persistence. We chose this over
 * re-implementing the grain lifecycle inside entity handlers because the timer engine, the dormant-until-activated
 * rule, stale-tick dropping and deactivation order are subtle and already tested; the cost is one local mailbox hop
 * per message. The entity handler waits until the grain has handled each message, so the cluster's view (a
 * persisted message is done, the entity is idle) matches the grain's.
 *
 * When the entity stops (idle passivation, shard moved away, shutdown), its scope closes the local activation:
 * timers stop, `onDeactivate` runs, and messages still waiting are rejected rather than starting an activation
 * here; the cluster routes the next message to wherever the shard lives.
 *
 * Keep-alive timers: while an activation holds one, the entity is kept alive with `Entity.keepAlive(true)`. When
 * the last goes, keep-alive is released and the entity sends itself a no-op `Touch`, so idle time counts from then
 * (releasing keep-alive alone does not refresh the entity's idle clock).
 */
import type { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import * as Entity from "@effect/cluster/Entity"
import { Sharding } from "@effect/cluster/Sharding"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { ActorSystem } from "../../ActorSystem.js"
import { type Grain, type InvalidGrainKey, InvalidGrainKind, UnknownGrainKind } from "../../Grain.js"
import { systemOf } from "../../internal/actorSystem.js"
import { type GrainAskError, GrainRegistry, idOf, keyProblem, resolveKinds } from "../../internal/grain.js"
import type { TickTracing } from "../../internal/tracing.js"
import * as Passivation from "../../Passivation.js"
import { Reminders } from "../Reminders.js"
import {
  type AskFailure,
  DEFAULT_SEND_TIMEOUT,
  encodeMessage,
  type GrainClient,
  type GrainSendTimeout,
  guardedSend,
  type InvalidGrainMessage,
  type InvalidGrainReply,
  issueOf,
  type KindWire,
  kindsByGrain,
  type ReminderDeliveries,
  type ReminderDelivery,
  registerLocalKind,
  sendTimedOut,
  type UnknownClusterGrainKind,
  unregisterLocalKind
} from "./grainProtocol.js"
import { reminderSpan } from "./spans.js"

/** A kind this runner hosts: its wire and the entity's idle time. */
export interface HostedKind<in out Msg, in out A, in out E> extends KindWire<Msg, A, E> {
  readonly maxIdleTime: Duration.Duration | undefined
}

/** What a send from a client can fail with, besides its timeout and the rpc's own errors. */
export type ClientError =
  | InvalidGrainKey
  | UnknownClusterGrainKind
  | InvalidGrainMessage
  | InvalidGrainReply
  | MailboxFull
  | AlreadyProcessingMessage
  | PersistenceError

/** Checks the key (as `Grains` does: a non-empty string) and the message, then sends it through `rpc`. */
const send = <Msg, A, E, B, EB, T>(
  kind: KindWire<Msg, A, E>,
  key: string,
  message: Msg,
  timeout: Duration.DurationInput,
  onTimeout: () => T,
  rpc: (client: GrainClient<Msg, A, E>) => Effect.Effect<B, EB>
): Effect.Effect<B, EB | T | ClientError, Sharding> =>
  Effect.suspend((): Effect.Effect<B, EB | T | ClientError, Sharding> => {
    const invalid = keyProblem(kind.grain, key)
    if (invalid !== undefined) return Effect.fail(invalid)
    return Effect.zipRight(encodeMessage(kind, key, message), guardedSend(kind, key, timeout, onTimeout, rpc))
  })

/** Client side: tell. */
export const tell = <Msg, A, E>(
  kind: KindWire<Msg, A, E>,
  key: string,
  message: Msg,
  timeoutMillis: number = Duration.toMillis(DEFAULT_SEND_TIMEOUT)
): Effect.Effect<void, ClientError | GrainSendTimeout, Sharding> =>
  send(kind, key, message, timeoutMillis, sendTimedOut(kind, key, timeoutMillis), (client) =>
    client.Tell({ message }, { discard: true })
  )

/** Client side: ask; wire failures are mapped by the caller. */
export const ask = <Msg, A, E, T>(
  kind: KindWire<Msg, A, E>,
  key: string,
  message: Msg,
  timeoutMillis: number,
  onTimeout: () => T
): Effect.Effect<A | undefined, AskFailure<E> | T | ClientError, Sharding> =>
  send(kind, key, message, timeoutMillis, onTimeout, (client) => client.Ask({ message }))

/** `value` if it encodes with `schema` (then it is an `A` the wire can carry), else the issue. */
const wireValue = <A>(schema: Schema.Schema<A, unknown>, value: unknown): Either.Either<A, string> => {
  const encoded = Schema.encodeUnknownEither(schema)(value)
  // encoding checked the value against the schema's type side: it is an A
  return Either.isLeft(encoded) ? Either.left(issueOf(encoded.left)) : Either.right(value as A)
}

/** A grain's wire error for an ask that failed on this runner; an `err` value must encode with the kind's schema. */
const toWire =
  <E>(errorSchema: Schema.Schema<E, unknown>) =>
  (error: GrainAskError): AskFailure<E> => {
    switch (error._tag) {
      case "GrainReplyError":
        return Either.match(wireValue(errorSchema, error.error), {
          onLeft: (issue): AskFailure<E> => ({ _tag: "InvalidReply", issue }),
          onRight: (value): AskFailure<E> => ({ _tag: "ReplyError", error: value })
        })
      case "GrainMessageUnhandled":
        return { _tag: "Unhandled" }
      case "GrainFailed":
        return { _tag: "Failed", cause: error.cause }
      case "GrainActivationFailed":
        return { _tag: "ActivationFailed", cause: error.cause }
      case "AskUndeliverable":
        return { _tag: "Undeliverable", reason: error.reason }
      case "UnknownGrainKind":
        return { _tag: "Undeliverable", reason: "stopped" }
    }
  }
/** Keeps the entity alive while `set(true)`; applies changes in order on one fiber at a time. */
const keepAliveSwitch = (runtime: Runtime.Runtime<Sharding | Entity.CurrentAddress>, touch: Effect.Effect<void>) => {
  let desired = false
  let applied = false
  let fiber: Fiber.RuntimeFiber<void> | undefined
  const apply: Effect.Effect<void, never, Sharding | Entity.CurrentAddress> = Effect.suspend(() => {
    if (desired === applied) {
      fiber = undefined
      return Effect.void
    }
    const target = desired
    return Entity.keepAlive(target).pipe(
      Effect.zipRight(target ? Effect.void : touch),
      Effect.zipRight(
        Effect.suspend(() => {
          applied = target
          return apply
        })
      )
    )
  })
  return {
    set: (enabled: boolean) => {
      desired = enabled
      if (fiber === undefined) fiber = Runtime.runFork(runtime)(apply)
    },
    stop: Effect.suspend(() => (fiber === undefined ? Effect.void : Fiber.interruptFork(fiber)))
  }
}

/** Any hosted kind, each with its own types. */
export type AnyHostedKind = HostedKind<any, any, any>

/**
 * The kinds by name, each checked as `Grains.layer` checks its kinds (`resolveKinds`), and the problem `make` left on
 * a cluster grain (`problemOf`, an unusable `maxIdleTime`): a kind the host cannot run is an `InvalidGrainKind`.
 */
const resolveHostedKinds = (
  kinds: ReadonlyArray<AnyHostedKind>,
  problemOf: (kind: AnyHostedKind) => InvalidGrainKind | undefined
): Either.Either<ReadonlyMap<string, Grain<any, any, any, any>>, InvalidGrainKind> => {
  if (!Array.isArray(kinds)) {
    return Either.left(
      new InvalidGrainKind({
        kind: String(kinds),
        field: "kind",
        reason: "ClusterGrain.layer takes an array of cluster grain kinds"
      })
    )
  }
  for (const kind of kinds) {
    if (kindsByGrain.get(kind?.grain) !== kind) {
      return Either.left(
        new InvalidGrainKind({
          kind: String((kind as { readonly name?: unknown } | undefined)?.name),
          field: "kind",
          reason: "it is not a cluster grain kind: make one with ClusterGrain.make"
        })
      )
    }
    const problem = problemOf(kind)
    if (problem !== undefined) return Either.left(problem)
  }
  return resolveKinds(kinds.map((kind) => kind.grain))
}

/** What the kinds of one host share. */
interface Host {
  readonly registry: GrainRegistry
  readonly sharding: Sharding["Type"]
  /** Per activation, where its keep-alive changes go. */
  readonly keepAliveSinks: Map<string, (enabled: boolean) => void>
  readonly reminders: Option.Option<Reminders["Type"]>
  /** The actor system's tracing when it makes spans (a span per reminder occurrence), else undefined. */
  readonly tracing: TickTracing | undefined
}

/** Registers `kind` as an entity whose handlers forward to the grain's local activation. */
const hostKind = <Msg, A, E>(kind: HostedKind<Msg, A, E>, host: Host) =>
  Effect.gen(function* () {
    const { registry, sharding, keepAliveSinks, reminders, tracing } = host
    registerLocalKind(sharding, kind)
    yield* Effect.addFinalizer(() => Effect.sync(() => unregisterLocalKind(sharding, kind.name)))
    const logged = (what: string, key: string) => (error: GrainAskError) =>
      Effect.logWarning(`${what} for grain ${kind.name}/${key} was not handled`, error)
    const wire = toWire(kind.error)

    const build = Effect.gen(function* () {
      const address = yield* Entity.CurrentAddress
      const key = address.entityId
      const entityRuntime = yield* Effect.runtime<Sharding | Entity.CurrentAddress>()
      const touch: Effect.Effect<void> = Effect.flatMap(kind.entity.client, (client) =>
        Effect.ignore(client(key).Touch(undefined, { discard: true }))
      ).pipe(Effect.provideService(Sharding, sharding))
      const keepAlive = keepAliveSwitch(entityRuntime, touch)
      /** Occurrences of reminders of this grain, handed to the reminders service (each in a span of its own). */
      const remind = (deliveries: ReadonlyArray<ReminderDelivery>) =>
        Option.isSome(reminders)
          ? reminders.value.deliver(
              kind,
              key,
              deliveries,
              (message) => registry.tellTracked(kind.grain, key, message),
              tracing === undefined
                ? undefined
                : (delivery, handled) => reminderSpan(tracing, `${kind.name}/${key}`, delivery, handled)
            )
          : Effect.logError(
              `reminders ${deliveries.map(({ name }) => `"${name}"`).join(", ")} for grain ${kind.name}/${key} ` +
                "arrived on a runner without the Reminders service; they are dropped"
            )
      const id = idOf(kind.name, key)
      keepAliveSinks.set(id, keepAlive.set)
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() => {
          if (keepAliveSinks.get(id) === keepAlive.set) keepAliveSinks.delete(id)
          return Effect.zipRight(keepAlive.stop, registry.close(kind.name, key))
        })
      )
      return kind.entity.of({
        // A failure of the grain's handler is its own (the grain logged it and was deactivated), as for a local tell.
        Tell: (request) =>
          Effect.catchAll(registry.tellTracked(kind.grain, key, request.payload.message), (error) =>
            error._tag === "GrainFailed" ? Effect.void : logged("a told message", key)(error)
          ),
        Ask: (request) =>
          registry.ask(kind.grain, key, request.payload.message).pipe(
            Effect.mapError(wire),
            Effect.flatMap((value) => {
              const reply = kind.reply
              if (reply === undefined || value === undefined) return Effect.succeed(undefined)
              return Either.match(wireValue(reply, value), {
                onLeft: (issue) => Effect.fail<AskFailure<E>>({ _tag: "InvalidReply", issue }),
                onRight: Effect.succeed
              })
            })
          ),
        Touch: () => Effect.void,
        Remind: (request: { readonly payload: ReminderDelivery }) => remind([request.payload]),
        RemindNow: (request: { readonly payload: ReminderDeliveries }) => remind(request.payload.deliveries)
      })
    })
    yield* sharding.registerEntity(kind.entity, build, { maxIdleTime: kind.maxIdleTime, concurrency: 1 })
  })

/**
 * Hosts `kinds` on this runner. `R` is what the kinds' handlers need (the caller names it from the kinds' types);
 * their activations run with it.
 */
export const layer = <R>(
  kinds: ReadonlyArray<AnyHostedKind>,
  problemOf: (kind: AnyHostedKind) => InvalidGrainKind | undefined
): Layer.Layer<never, InvalidGrainKind, Sharding | ActorSystem | R> =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const byName = yield* resolveHostedKinds(kinds, problemOf)
      const sharding = yield* Sharding
      const system = yield* ActorSystem
      const reminders = yield* Effect.serviceOption(Reminders)
      const runtime = yield* Effect.runtime<R>()
      const keepAliveSinks = new Map<string, (enabled: boolean) => void>()

      const tellGrain = (kind: Grain<any, any, any, any>, key: string, message: unknown) => {
        const wire = kindsByGrain.get(kind)
        if (wire === undefined) {
          return Effect.fail(
            new UnknownGrainKind({ kind: kind.name, detail: "it is not a cluster grain (see ClusterGrain.make)" })
          )
        }
        return tell(wire, key, message).pipe(
          Effect.catchAll((error): Effect.Effect<void, UnknownGrainKind> => {
            if (error._tag === "UnknownClusterGrainKind") {
              return Effect.fail(new UnknownGrainKind({ kind: error.kind, detail: error.detail }))
            }
            if (error._tag === "InvalidGrainMessage") return Effect.die(error)
            return Effect.logWarning(`tellGrain: message for grain ${wire.name}/${key} not delivered`, error)
          }),
          Effect.provideService(Sharding, sharding)
        )
      }

      const registry = new GrainRegistry(system, runtime, byName, Passivation.never, {
        tellGrain,
        // The cluster passivates idle grains (the entity's maxIdleTime); message-count passivation stays local.
        passivationOf: (kind) => (kind.passivation?._tag === "MessageCount" ? kind.passivation : Passivation.never),
        keepAliveChanged: (identity, enabled) => keepAliveSinks.get(idOf(identity.kind, identity.key))?.(enabled)
      })

      const tickTracing = systemOf(system)?.tracing
      const tracing = tickTracing?.enabled === true ? tickTracing : undefined
      for (const kind of kinds) yield* hostKind(kind, { registry, sharding, keepAliveSinks, reminders, tracing })
    })
  )
