import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// `flowdir answer <await> [FILE…] [--choice X] [--approve]`.
struct AnswerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "answer",
        abstract: "Answer a question: with files, a choice, or an approval.",
        discussion: """
            Files are copied into the instance's inbox/ under the names the question expects, \
            then checked like any dropped file. With several expected files, name each as PORT=FILE. \
            For a step that failed or was cancelled, the files take the place of its outputs \
            (one per output port) and the steps it blocked go on with them.

            Exit codes: 0 answered (or kept until the node asks); 1 refused, with the reason; \
            75 the flowdir holding the instance did not respond.
            """
    )

    @Argument(help: "The question: <instance>/<node>, an await id, or a flowdir:// link.")
    var target: String

    @Argument(help: "The answer's files, in the order the question lists them, or as PORT=FILE.", completion: .file())
    var files: [String] = []

    @Option(help: "The choice, for a choice question.")
    var choice: String?

    @Flag(help: "Approve, for a confirm_params question.")
    var approve = false

    @Flag(help: "Decline, for a confirm_params question (the node is cancelled).")
    var decline = false

    @Option(name: .customLong("set"), help: "An edited param when approving: KEY=VALUE (repeatable).")
    var set: [String] = []

    @Flag(help: "Answer even while someone else holds the claim.")
    var force = false

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() async throws {
        let ctx = try Context.load()
        let t = try AwaitTarget.resolve(target, ctx: ctx, root: root)
        let by = PersonRequests.person(t.instance)
        var request = PersonRequest(verb: .answer, node: t.node, by: by, force: force)
        if !files.isEmpty {
            guard choice == nil, !approve, !decline else { throw CommandError("give files, or --choice, or --approve; not both") }
            // Before anything is asked the expected names come from the workflow.
            let expects = try t.question?.expects ?? expectedFiles(t, ctx)
            guard !expects.isEmpty else {
                throw CommandError("'\(t.node)' does not ask for files", hint: "answer it with --choice or --approve")
            }
            for (i, arg) in files.enumerated() {
                var port: String
                var path = arg
                if let eq = arg.firstIndex(of: "="), expects.contains(where: { $0.port == String(arg[..<eq]) }) {
                    port = String(arg[..<eq])
                    path = String(arg[arg.index(after: eq)...])
                } else {
                    guard i < expects.count else {
                        throw CommandError("'\(t.node)' expects \(expects.count) file\(expects.count == 1 ? "" : "s") (\(expects.map(\.port).joined(separator: ", "))), not \(files.count)")
                    }
                    port = expects[i].port
                }
                let expected = expects.first { $0.port == port }!
                // The dropped file keeps its own extension when it has one (photo.jpg → load1.image.jpg).
                let ext = Path.fileExtension(path)
                let name = "\(t.node).\(port)." + (ext.isEmpty ? Path.fileExtension(expected.file) : ext.lowercased())
                // A line break (or any control character) in a name would reach commit messages and terminals.
                guard InboxName.isPlainName(name) else {
                    throw CommandError("cannot use \(TerminalText.oneLine(path)): its name has a control character (a line break?)",
                                       hint: "rename the file, or copy it to a plain name first")
                }
                do {
                    try InboxFiles.place(path, in: t.instance, as: name, limit: ctx.config.answerSizeLimit)
                } catch {
                    throw CommandError("cannot use \(path): \(error)")
                }
                request.files.append(name)
            }
        } else if let choice {
            request.choice = .string(choice)
        } else if approve || decline {
            guard !(approve && decline) else { throw CommandError("--approve or --decline, not both") }
            request.approve = approve
            for s in set {
                let o = try InstanceCreator.Override(parsing: t.node + "." + s)
                request.params.append(ParamEntry(key: o.param, value: o.value))
            }
        } else {
            let q = try t.requireQuestion()
            throw CommandError("say what the answer is", hint: AwaitPolicy.instructions(q, instanceName: Path.basename(t.instance)).dropFirst().first)
        }
        try PersonRequests.report(try await PersonRequests.send(request, to: t.instance, ctx: ctx))
    }

    /// Files for a node that has not asked yet, or that failed (they take
    /// the place of its outputs), from its output ports.
    func expectedFiles(_ t: AwaitTarget, _ ctx: Context) throws -> [ExpectedFile] {
        let snapshot = try ctx.reader.read(t.instance)
        guard let node = snapshot.graph?.node(t.node) else { return [] }
        if snapshot.state(of: t.node)?.state.isFailedOrCancelled == true { return AwaitPolicy.expectedFiles(node) }
        guard let spec = node.awaitSpec, spec.type == .drawMask || spec.type == .selectAsset else { return [] }
        return AwaitPolicy.expectedFiles(node)
    }
}

/// `flowdir snooze <await> [--for 1h]`.
struct SnoozeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snooze",
        abstract: "Hide a question from Pending for a while (default 1h; at most 5 times)."
    )

    @Argument(help: "The question: <instance>/<node>, an await id, or a flowdir:// link.")
    var target: String

    @Option(name: .customLong("for"), help: "How long: 30m, 2h, PT1H…")
    var duration: String?

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() async throws {
        try await PersonRequests.ask(.snooze, about: target, root: root) {
            guard let duration else { return nil }
            switch FlowDuration.parse(duration) {
            case .success(let d) where d.seconds > 0: return d.seconds
            case .failure(.tooLong): throw CommandError("--for \(FlowDuration.Problem.tooLong(duration))", hint: "write 30m, 2h, 1d or PT1H")
            default: throw CommandError("--for '\(duration)' is not a duration", hint: "write 30m, 2h, 1d or PT1H")
            }
        }
    }
}
