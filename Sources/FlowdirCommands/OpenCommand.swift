import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir open <await|flowdir://link>`: what a notification's link leads to.
struct OpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Open a question (from a flowdir:// link too): claim it, show it, its context files and how to answer."
    )

    @Argument(help: "The question: <instance>/<node>, an await id, or a flowdir:// link.")
    var target: String

    @Flag(help: "Show it without claiming it.")
    var noClaim = false

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() async throws {
        let ctx = try Context.load()
        let t = try AwaitTarget.resolve(target, ctx: ctx, root: root)
        let q = try t.requireQuestion()
        let name = Path.basename(t.instance)
        let now = ctx.clock.now()
        var claimNote: String?
        if !noClaim {
            let result = try await PersonRequests.send(PersonRequest(verb: .claim, node: t.node, by: PersonRequests.person(t.instance)),
                                                       to: t.instance, ctx: ctx)
            claimNote = result.ok ? result.message : "Not claimed: " + result.message
        }
        let term = ctx.terminal
        Output.line(term.paint(TerminalText.oneLine(q.title), "1") + (q.detail.map { " — " + TerminalText.oneLine($0) } ?? ""))
        Output.line("\(name)/\(q.node) · \(q.type.rawValue) · \(q.urgency.rawValue) · " + AwaitPolicy.ageLine(q, now: now))
        if let claimNote { Output.line(claimNote) }
        if !q.context.isEmpty {
            Output.line()
            Output.line("Context:")
            for c in q.context { Output.line("  \(c.name): \(Path.join(t.instance, c.path))") }
        }
        if !q.choices.isEmpty { Output.line("Choices: " + q.choices.joined(separator: ", ") + (q.defaultChoice.map { " (default \($0))" } ?? "")) }
        if !q.params.isEmpty { Output.line("Params: " + q.params.map { "\($0.key)=\($0.value.plainText)" }.joined(separator: " · ")) }
        Output.line()
        for line in AwaitPolicy.instructions(q, instanceName: name).dropFirst() { Output.line(line) }
        Output.line("Question file: \(t.file)")
    }
}
