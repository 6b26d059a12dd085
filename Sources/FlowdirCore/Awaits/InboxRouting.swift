/// Where a file in `inbox/` goes, decided from its name and the instance's
/// questions alone, so that each case is tested without a folder. The
/// engine carries the verdict out (`Engine.takeInboxEvent`): a refusal sets
/// the file aside as `.rejected` with a note; an answer is content-checked
/// against its port, then taken once every file its question asks for is in.
public enum InboxRoute: Equatable, Sendable {
    /// Not a person's file (flowdir's own, the question itself), or one
    /// still being written: nothing now.
    case pass
    /// An answer for a node that has not asked yet: kept until it does.
    case keep
    /// Refused: `note` names the `.rejected` note, `reason` says why.
    case refuse(note: String, reason: String, hint: Hint)
    /// An answer to the open question of `node`, for the file it expects.
    case answer(node: String, expected: ExpectedFile)
    /// A person's file in place of what a failed (or cancelled) `node` should
    /// have made ("Replace input…" on the card it blocks): taken once every
    /// output port of the node has one, as a run of the person's.
    case replace(node: String, expected: ExpectedFile)

    /// What the refusal tells a person to do.
    public enum Hint: Equatable, Sendable {
        /// The names the instance's open questions take (of one node, or all).
        case expectedNames(node: String?)
        case text(String)
    }
}

public enum InboxRouting {
    /// - Parameters:
    ///   - settled: whether the file is complete (closed after writing,
    ///     moved in, or quiet a moment): a file mid-copy is never refused.
    ///   - answered: nodes a person answered that now run.
    ///   - instanceName: the folder's name, as commands take it.
    public static func route(_ name: String, settled: Bool, graph: WorkflowGraph, awaits: [String: AwaitRecord],
                             state: (String) -> NodeState, answered: Set<String>, instanceName: String) -> InboxRoute {
        route(InboxName.classify(name), settled: settled, graph: graph, awaits: awaits, state: state, answered: answered, instanceName: instanceName)
    }

    /// The same, for a name already classified (the engine classifies each once per look).
    public static func route(_ kind: InboxName, settled: Bool, graph: WorkflowGraph, awaits: [String: AwaitRecord],
                             state: (String) -> NodeState, answered: Set<String>, instanceName: String) -> InboxRoute {
        switch kind {
        case .ignored, .awaitFile:
            return .pass
        case .unexpected(let prefix):
            return settled ? .refuse(note: prefix, reason: "it is not named for an answer", hint: .expectedNames(node: nil)) : .pass
        case .answer(let nodeID, let port, _):
            guard let node = graph.node(nodeID) else {
                guard settled else { return .pass }
                return .refuse(note: nodeID, reason: "there is no node '\(nodeID)' in this workflow"
                               + (Suggest.hint(for: nodeID, in: graph.order).map { " (\($0))" } ?? ""),
                               hint: .expectedNames(node: nil))
            }
            let now = state(nodeID)
            if let a = awaits[nodeID], now == .awaitingUser {
                guard settled else { return .pass }
                guard let expected = a.expects.first(where: { $0.port == port }) else {
                    let why = a.expects.isEmpty
                        ? "'\(nodeID)' asks for no file: answer in inbox/\(nodeID).await.yaml"
                        : "'\(nodeID)' has no port '\(port)'"
                    return .refuse(note: nodeID, reason: why, hint: .expectedNames(node: nodeID))
                }
                return .answer(node: nodeID, expected: expected)
            }
            // Answered before it was asked: kept until it is.
            if node.awaitSpec != nil, node.outputs.contains(where: { $0.name == port }),
               !now.isTerminal, !now.isActive, !answered.contains(nodeID) {
                return .keep
            }
            guard settled else { return .pass }
            if now.isFailedOrCancelled, let expected = AwaitPolicy.expectedFiles(node).first(where: { $0.port == port }) {
                return .replace(node: nodeID, expected: expected)
            }
            return .refuse(note: nodeID, reason: "'\(nodeID)' is not waiting for an answer (it is \(now.name))",
                           hint: .text("to answer it again, `\(Shell.command(["flowdir", "rerun", instanceName, nodeID]))` first"))
        }
    }
}
