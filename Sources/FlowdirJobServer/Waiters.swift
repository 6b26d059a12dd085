import FlowdirCore
import FlowdirIO
import NIOCore
import ServiceLifecycle

/// The creates held by `Prefer: wait` (docs/jobserver.md): each waits on
/// its own stream, which is woken when its prediction ends, its wait is
/// over, its client goes away or the server stops: no polling, and no lock
/// held while it waits. At most `limit` are held at once; a create past
/// that is answered at once, as without the header.
final class Waiters: Sendable {
    enum Wake: Sendable { case ended, timeUp, gone, stopping }

    /// One held create, from `hold` (before its prediction can end) to `wait`.
    struct Held: Sendable {
        let number: UInt64
        let prediction: String
        let stream: AsyncStream<Wake>
    }

    private struct State {
        var next: UInt64 = 0
        var wakers: [UInt64: (prediction: String, wake: AsyncStream<Wake>.Continuation, connection: ObjectIdentifier?)] = [:]
        var byPrediction: [String: Set<UInt64>] = [:]
        /// Connections whose close wakes what they hold: one close callback
        /// each, however many creates they send one after another.
        var watched: [ObjectIdentifier: Set<UInt64>] = [:]
        var stopping = false
    }

    let limit: Int
    private let state = Locked(State())

    let clock: FlowdirClock

    init(limit: Int, clock: FlowdirClock = .system) {
        self.limit = max(0, limit)
        self.clock = clock
    }

    /// Creates held now.
    var count: Int { state.locked { $0.wakers.count } }

    /// A place for a create of `prediction` to wait in, or nil when `limit`
    /// are held already or the server is stopping. Taken before the
    /// prediction starts, so its end cannot come unseen.
    func hold(_ prediction: String) -> Held? {
        let (stream, wake) = AsyncStream<Wake>.makeStream(bufferingPolicy: .bufferingNewest(1))
        return state.locked { s -> Held? in
            guard !s.stopping, s.wakers.count < limit else { return nil }
            s.next += 1
            s.wakers[s.next] = (prediction, wake, nil)
            s.byPrediction[prediction, default: []].insert(s.next)
            return Held(number: s.next, prediction: prediction, stream: stream)
        }
    }

    /// The prediction ended: what waits for it is answered.
    func ended(_ prediction: String) {
        let wakers = state.locked { s in (s.byPrediction[prediction] ?? []).compactMap { s.wakers[$0]?.wake } }
        for w in wakers { w.yield(.ended) }
    }

    /// The server stops: every held create is answered now, and none is held from now on.
    func stop() {
        let wakers = state.locked { s in
            s.stopping = true
            return s.wakers.values.map(\.wake)
        }
        for w in wakers { w.yield(.stopping) }
    }

    /// Waits until `held`'s prediction ends, `seconds` pass, the client's
    /// connection closes or the server stops; says which came first.
    func wait(_ held: Held, seconds: Double, channel: any Channel) async -> Wake {
        guard let wake = state.locked({ $0.wakers[held.number]?.wake }) else { return .stopping }
        defer { release(held) }
        watch(channel, for: held.number, wake: wake)
        let clock = self.clock
        let timer = Task {
            try? await clock.sleep(for: .milliseconds(Int(seconds * 1000)))
            wake.yield(.timeUp)
        }
        defer { timer.cancel() }
        return await withGracefulShutdownHandler {
            for await why in held.stream { return why }
            return .stopping
        } onGracefulShutdown: {
            wake.yield(.stopping)
        }
    }

    /// The client's leaving wakes `number`: its half of the connection
    /// closed (the server allows half-closed connections, so that alone
    /// does not close the channel) or the whole of it. The first create
    /// held on a connection adds the watch it gets, once.
    private func watch(_ channel: any Channel, for number: UInt64, wake: AsyncStream<Wake>.Continuation) {
        let key = ObjectIdentifier(channel)
        let first = state.locked { s in
            defer {
                s.watched[key, default: []].insert(number)
                s.wakers[number]?.connection = key
            }
            return s.watched[key] == nil
        }
        guard first else { return }
        let gone: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            let wakers = self.state.locked { s in
                let held = s.watched.removeValue(forKey: key) ?? []
                return held.compactMap { s.wakers[$0]?.wake }
            }
            for w in wakers { w.yield(.gone) }
        }
        channel.eventLoop.execute {
            try? channel.pipeline.syncOperations.addHandler(InputClosed(gone), position: .first)
        }
        // Run at once when it is closed already.
        channel.closeFuture.whenComplete { _ in gone() }
    }

    private func release(_ held: Held) {
        let wake = state.locked { s -> AsyncStream<Wake>.Continuation? in
            let w = s.wakers.removeValue(forKey: held.number)
            s.byPrediction[held.prediction]?.remove(held.number)
            if s.byPrediction[held.prediction]?.isEmpty == true { s.byPrediction[held.prediction] = nil }
            if let key = w?.connection { s.watched[key]?.remove(held.number) }
            return w?.wake
        }
        wake?.finish()
    }
}

/// Tells when the client closed its half of the connection (it sent all it
/// will, or went away); everything passes through unchanged.
final class InputClosed: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let closed: @Sendable () -> Void

    init(_ closed: @escaping @Sendable () -> Void) { self.closed = closed }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let e = event as? ChannelEvent, e == .inputClosed { closed() }
        context.fireUserInboundEventTriggered(event)
    }
}
