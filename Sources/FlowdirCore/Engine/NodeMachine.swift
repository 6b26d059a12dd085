/// What can happen to a node; each event is checked against the node's
/// state before it is applied (docs/engine.md, "Node states").
public enum NodeEvent: Hashable, Sendable {
    case block(BlockReason)
    case becomeReady
    case awaitUser
    case startLocal
    case enqueueRemote
    case startRemote
    case startDownload
    case succeed
    case fail(NodeError)
    case cancel(reason: String?)
    case skip
}

public struct InvalidTransition: Error, Hashable, Sendable, CustomStringConvertible {
    public var from: NodeState
    public var event: NodeEvent
    public var description: String { "a node cannot go from \(from.name) by \(event)" }
}

/// The node state machine: the only way a state changes.
public enum NodeMachine {
    /// The state after `event`, or an error if the move is not allowed.
    public static func apply(_ event: NodeEvent, to state: NodeState) -> Result<NodeState, InvalidTransition> {
        let bad = Result<NodeState, InvalidTransition>.failure(InvalidTransition(from: state, event: event))
        switch (state, event) {
        // Anything not under way can be (re)blocked or made ready by gating,
        // retry and rerun; finished nodes are reopened this way too.
        case (.blocked, .block(let r)), (.ready, .block(let r)), (.succeeded, .block(let r)),
             (.failed, .block(let r)), (.cancelled, .block(let r)), (.skipped, .block(let r)), (.awaitingUser, .block(let r)):
            return .success(.blocked(r))
        case (.blocked, .becomeReady), (.succeeded, .becomeReady), (.failed, .becomeReady),
             (.cancelled, .becomeReady), (.skipped, .becomeReady), (.awaitingUser, .becomeReady):
            return .success(.ready)
        case (.ready, .awaitUser):
            return .success(.awaitingUser)
        case (.ready, .startLocal):
            return .success(.runningLocal)
        case (.ready, .enqueueRemote):
            return .success(.queuedRemote)
        // A job waiting for an endpoint that cannot be reached is blocked
        // (offline), and queued again once it gets through.
        case (.queuedRemote, .block(let r)):
            return .success(.blocked(r))
        case (.blocked(.offline), .enqueueRemote):
            return .success(.queuedRemote)
        case (.queuedRemote, .startRemote):
            return .success(.runningRemote)
        case (.runningLocal, .startDownload), (.runningRemote, .startDownload):
            return .success(.downloading)
        case (.queuedRemote, .startDownload):
            return .success(.downloading)
        // A cluster job writes its outputs where flowdir reads them: nothing to download.
        // A failed or cancelled node succeeds when a person supplies its outputs (a run of theirs).
        case (.runningLocal, .succeed), (.downloading, .succeed), (.awaitingUser, .succeed), (.runningRemote, .succeed),
             (.failed, .succeed), (.cancelled, .succeed):
            return .success(.succeeded)
        case (.runningLocal, .fail(let e)), (.queuedRemote, .fail(let e)), (.blocked(.offline), .fail(let e)), (.runningRemote, .fail(let e)),
             (.downloading, .fail(let e)), (.awaitingUser, .fail(let e)), (.ready, .fail(let e)):
            return .success(.failed(e))
        case (.ready, .cancel(let r)), (.awaitingUser, .cancel(let r)), (.runningLocal, .cancel(let r)),
             (.queuedRemote, .cancel(let r)), (.runningRemote, .cancel(let r)), (.downloading, .cancel(let r)),
             (.blocked, .cancel(let r)):
            return .success(.cancelled(reason: r))
        case (.awaitingUser, .skip), (.ready, .skip), (.blocked, .skip):
            return .success(.skipped)
        default:
            return bad
        }
    }
}
