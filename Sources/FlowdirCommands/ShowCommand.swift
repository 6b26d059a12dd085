import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// `flowdir show <instance>`: the tool cards, in graph order.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show an instance's tool cards: state, why blocked, params, last run, progress."
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    @Flag(help: "Print as JSON.")
    var json = false

    struct Card: Encodable {
        var id: String
        var kind: String
        var state: String
        var reason: String?
        var run: Int
        var progress: Double?
        /// A remote job's id, and what its card says while checks fail (`Reconnecting…`).
        var job: String?
        var note: String?
        var digest: String
        var resourceClass: String
        var updatedAt: String?
        var interactive: Bool
        /// Its params differ from those its last run used (docs/engine.md:
        /// the next `flowdir run` blocks it, "Params changed").
        var paramsEdited: Bool
        var lastRun: LastRun?
        /// The end of a failed, cancelled or running job's log.
        var logTail: [String]?
        /// The node a blocked one waits on (what failed, was skipped, changed or is still to come).
        var upstream: String?
    }

    /// What the node's last run (`runs/<n>/run.yaml`) made, or why it did not.
    struct LastRun: Encodable {
        var run: Int
        var trigger: String
        var startedAt: String
        var finishedAt: String?
        var exitCode: Int32?
        var job: String?
        var error: String?
        var errorCode: String?
        /// What to do about the error, in the engine's words.
        var errorHint: String?
        var outputs: [Made]
    }

    struct Made: Encodable {
        var port: String
        var file: String
        var size: Int
        var type: String
        var blob: String
        /// `not on this machine (12.3 MB)` when its working file is the
        /// Git LFS pointer (docs/storage.md), and the command that gets it.
        var absent: String?
        var get: String?

        init(_ o: OutputRecord, instance: String, node: String) {
            port = o.port
            file = o.file
            size = o.size
            type = o.type.description
            blob = o.blob
            // Only a stored output can be a pointer: small ones are not read.
            let relative = InstancePaths.node(node) + "/" + o.file
            if o.sha256 != nil, let p = AbsentContent.pointer(atFile: Path.join(instance, relative)) {
                absent = AbsentContent.words(size: p.size)
                get = AbsentContent.getCommand(instance: instance, relative: relative)
            }
        }
    }

    /// The instance and its cards (`show --json`; `flowdir serve`'s detail,
    /// whose cards say more).
    struct Report<Node: Encodable>: Encodable {
        var id: String
        var title: String
        var path: String
        var template: String
        var status: String
        var steps: String
        var done: Int
        var total: Int
        var updatedAt: String?
        var archived: Bool
        /// `active`, or `paused` (`flowdir polling pause`).
        var polling: String
        /// Whether workflow.yaml is valid (nothing runs until it is).
        var valid: Bool
        var awaits: [String]
        var nodes: [Node]

        init(_ s: InstanceSnapshot, path: String, nodes: [Node]) {
            let summary = s.summary
            id = s.record.id
            title = s.record.title
            self.path = path
            template = s.record.template
            status = summary.status.rawValue
            steps = summary.steps
            done = summary.finishedSteps
            total = summary.totalSteps
            updatedAt = s.updatedAt?.iso8601
            archived = s.record.archived
            polling = s.record.polling == .paused ? "paused" : "active"
            valid = s.workflow.isValid
            awaits = s.pendingAwaits
            self.nodes = nodes
        }
    }

    func run() throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        var reader = ctx.reader
        reader.readsLastRuns = true  // each card says what its last run made
        let s = try reader.read(path)
        let cards = Self.cards(s)
        let summary = s.summary
        if json { return try Output.json(Report(s, path: path, nodes: cards)) }
        let t = ctx.terminal
        let now = ctx.clock.now()
        // Text from the instance's files is shown, never obeyed, one line each (see `TerminalText`).
        let text = TerminalText.oneLine
        var head = t.paint(text(s.record.title), "1") + "  " + StatusStyle.paint(summary.status.rawValue, t) + " · \(summary.steps) steps"
        if let u = s.updatedAt { head += " · updated " + RelativeTime.describe(u, now: now) }
        if s.record.archived { head += " · archived" }
        if s.record.polling == .paused { head += " · " + t.paint("polling paused", "33") + " (`flowdir polling resume`)" }
        Output.line(head)
        Output.line(t.paint("\(text(path)) · id \(text(s.record.id)) · from \(text(s.record.template))", "2"))
        if !s.workflow.isValid {
            Output.line()
            Output.line(t.paint("workflow.yaml is invalid; nothing will run until it is fixed:", "31"))
            let renderer = DiagnosticRenderer(sources: s.workflow.sources, useColor: t.colorOut)
            for d in s.workflow.diagnostics.errors.sortedByLocation() { Output.line(renderer.render(d)) }
        }
        Output.line()
        let idWidth = cards.map { text($0.id).count }.max() ?? 0
        let kindWidth = cards.map { text($0.kind).count }.max() ?? 0
        for card in cards {
            let id = text(card.id), kind = text(card.kind)
            var line = Self.glyph(card.state, t) + " " + t.paint(id, "1") + String(repeating: " ", count: idWidth - id.count)
            line += "  " + kind + String(repeating: " ", count: kindWidth - kind.count) + "  "
            line += StatusStyle.paint(text(card.state), t)
            if let reason = card.reason { line += " — " + text(reason) }
            if let p = card.progress { line += " · \(Int((p * 100).rounded()))%" }
            if card.run > 0 { line += t.paint(" · run \(card.run)", "2") }
            Output.line(line)
            let indent = String(repeating: " ", count: idWidth + 4)
            var details: [String] = []
            if !card.digest.isEmpty { details.append(text(card.digest)) }
            if card.paramsEdited, let last = card.lastRun { details.append("params edited since run \(last.run)") }
            if card.resourceClass == "remote" { details.append("remote" + (card.job.map { " job \(text($0))" } ?? "")) }
            if let note = card.note { details.append(text(note)) }
            if card.interactive, card.state != "succeeded" { details.append("needs a person") }
            if !details.isEmpty { Output.line(indent + t.paint(details.joined(separator: " · "), "2")) }
            if card.state == "succeeded", let made = card.lastRun?.outputs, !made.isEmpty {
                Output.line(indent + t.paint("→ " + made.map { "\(text($0.file)) " + ($0.absent ?? Self.size($0.size)) }.joined(separator: ", "), "2"))
                // One line per node: `storage get` of the node gets all its outputs.
                if let get = made.first(where: { $0.absent != nil })?.get { Output.line(indent + t.paint("  get it with `\(text(get))`", "2")) }
            }
            for line in card.logTail ?? [] { Output.line(indent + t.paint("│ ", "2") + text(line)) }
        }
        if !s.pendingAwaits.isEmpty {
            Output.line()
            Output.line("Waiting for you: " + s.pendingAwaits.map { "inbox/" + text($0) }.joined(separator: ", "))
        }
    }

    static func cards(_ s: InstanceSnapshot) -> [Card] {
        let ids = s.graph?.order ?? s.states.keys.sorted()
        return ids.map { id in
            let node = s.graph?.node(id)
            let record = s.states[id]
            // As the engine compares them: the file's params, else the template's with the tool's defaults.
            let params = s.params[id] ?? node.map { InstanceCodec.effectiveParams($0.spec.params, tool: $0.tool) } ?? []
            let last = s.lastRuns[id]
            var edited = false
            if let last, record?.state != .blocked(.paramsChanged) { edited = !Gating.sameParams(last.params, params) }
            var tail: [String]?
            if let record, record.run > 0 {
                let showsLog = switch record.state {
                case .failed, .cancelled: true
                default: record.state.isActive
                }
                if showsLog { tail = LogLines.last(3, inside: s.path, InstancePaths.run(id, record.run) + "/log.txt") }
            }
            return Card(id: id, kind: node?.spec.kind ?? "?", state: record?.state.name ?? "unknown",
                        reason: record?.state.reason, run: record?.run ?? 0, progress: record?.progress,
                        job: record?.job, note: record?.note,
                        digest: ParamDigest.make(params, tool: node?.tool),
                        resourceClass: node?.resourceClass.rawValue ?? "local", updatedAt: record?.updatedAt.iso8601,
                        interactive: node?.awaitSpec != nil, paramsEdited: edited,
                        lastRun: last.map { r in
                            LastRun(run: r.run, trigger: r.trigger.rawValue, startedAt: r.startedAt.iso8601,
                                    finishedAt: r.finishedAt?.iso8601, exitCode: r.exitCode, job: r.job, error: r.error?.summary, errorCode: r.error?.code,
                                    errorHint: r.error?.hint, outputs: r.outputs.map { Made($0, instance: s.path, node: id) })
                        },
                        logTail: tail, upstream: record.flatMap { Self.upstream(of: $0.state) })
        }
    }

    static func upstream(of state: NodeState) -> String? {
        guard case .blocked(let reason) = state else { return nil }
        switch reason {
        case .waitingFor(_, let node), .upstreamFailed(let node), .upstreamSkipped(let node), .inputChanged(let node): return node
        default: return nil
        }
    }

    /// `8 B`, `40.1 KB`, `2.0 MB`: 1,024 to the next unit, as the config reads sizes.
    static func size(_ bytes: Int) -> String { AbsentContent.size(Int64(bytes)) }

    static func glyph(_ state: String, _ t: Terminal) -> String {
        switch state {
        case "succeeded": t.paint("✓", "32")
        case "failed": t.paint("✗", "31")
        case "cancelled": t.paint("⊘", "31")
        case "skipped": t.paint("↷", "2")
        case "awaitingUser": t.paint("?", "33")
        case "ready": t.paint("○", "0")
        case "blocked": t.paint("·", "2")
        default: t.paint("●", "36")
        }
    }
}
