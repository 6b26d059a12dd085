import FlowdirIO

/// Events for the engine's loop, posted from any thread: the loop takes
/// all that arrived since it last looked, or waits for the next.
final class EventInbox: Sendable {
    private let state = Locked<(events: [EngineEvent], waiter: CheckedContinuation<Void, Never>?)>(([], nil))

    func post(_ event: EngineEvent) {
        let waiter = state.locked { s -> CheckedContinuation<Void, Never>? in
            s.events.append(event)
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// Everything posted so far, waiting for something if nothing is.
    func next() async -> [EngineEvent] {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let ready = state.locked { s -> Bool in
                if !s.events.isEmpty { return true }
                s.waiter = waiter
                return false
            }
            if ready { waiter.resume() }
        }
        return state.locked { s in
            defer { s.events = [] }
            return s.events
        }
    }

    var isEmpty: Bool { state.locked { $0.events.isEmpty } }
}
