// Package autoscale sizes a job's elastic role by measured training
// throughput (capability B4). It starts at the job's size, adds workers in
// steps while each added worker pays off, and stops for good at the first
// sign that growing no longer helps: a step that did not pay, pods that
// cannot be placed, the top of the range, or someone else resizing the
// job. Unlike KubeDL's torch-elastic controller it compares the median of
// several samples rather than one, judges the marginal worker rather than
// raw per-worker latency, grows by a fixed step clamped to maxReplicas
// rather than doubling past it, waits for the world to re-form before
// measuring, and records why it stopped.
//
// Nothing here reads the cluster or the clock. The controller calls
// Decide each tick with the Config, the State it kept from the last tick
// and an Observation, applies Decision.Replicas if set, then persists
// Decision.State in the job's status (apply first: a persisted State whose
// size the job does not have reads as an external scale next tick).
//
// # Notation
//
// n is State.Replicas, g is State.LastGood, t0 is State.ResizedAt,
// [lo, hi] is [MinReplicas, MaxReplicas], s is Step, k is SamplesPerSize,
// m is MinGain and w is SettleSeconds, all after Config.Defaults. T(x) is
// the median of the samples kept at size x. Going from p to n > p workers:
//
//	clamp(x)    = min(max(x, lo), hi)
//	gain(p, n)  = (T(n) − T(p)) / (n − p)    samples/s per added worker
//	pays(p, n)  ⇔ gain(p, n) ≥ m × T(p) / p
//
// That is, a step pays off when each added worker brings at least m of
// what an average worker brought at p (m = 1 asks for linear scaling).
//
// # Rules, in the order Decide applies them
//
//  0. A Stopped state is returned unchanged and never resizes. Starting
//     over is the caller's choice: it passes the zero State.
//  1. An invalid Config (Config.Validate) stops with Disabled, resizing
//     nothing.
//  2. The zero State (any Phase but Exploring or Stopped) starts: n = g =
//     SpecReplicas, t0 = Now. If SpecReplicas ∉ [lo, hi] it stops with
//     Disabled; if SpecReplicas = hi it stops with ReachedMax; otherwise it
//     is Exploring with reason Started. Nothing else is looked at this
//     tick.
//  3. SpecReplicas ≠ n: someone else (a user, an HPA through /scale)
//     resized the job. Stop with ExternalScale and do not resize.
//  4. Now − t0 < w (whole unix seconds): the world is re-forming after a
//     resize. Nothing is looked at; in particular nothing is resized.
//  5. Pending > 0: the cluster has no room for n. Stop with PendingPods,
//     resizing to clamp(g) if that differs from n. While Exploring, g < n
//     except at the starting size, where this stops without resizing.
//  6. A Sample counts only if it is finite and > 0 and Running = n (the
//     rate is the whole job's, so it belongs to n only when exactly n
//     workers run). The first k that count are kept at n; T(n) is their
//     median.
//  7. With k samples kept at n, n is judged. At the starting size (n = g)
//     there is nothing to compare with: scale up (likewise if the state no
//     longer holds p's samples, which Decide never causes). Otherwise, with p = g the
//     last good size: if pays(p, n), g = n and scale up; if not, stop with
//     NoGain, resizing to clamp(g).
//  8. Scale up: n' = clamp(n + s). If n' ≤ n, stop with ReachedMax without
//     resizing (n is good). Otherwise resize to n', t0 = Now, and measure
//     n' with reason ScaledUp.
//
// Ticks that change nothing else may still update Message (how many
// samples the size has). Decision.Event is set exactly when the exploration
// starts, resizes or stops.
//
// # Guarantees
//
// Every size Decide asks for lies in [lo, hi]. It never resizes within w
// of the previous resize: rules 5 and 7 are reached only after rule 4. A
// Stopped state stays Stopped. The State holds only finite numbers and
// unix seconds, so it survives JSON unchanged, and it stays small: at most
// MaxSizes sizes of at most k ≤ MaxSamplesPerSize samples each.
package autoscale
