import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir history [<instance> [<node>]]`: what happened, from git.
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show what happened to an instance (or one node), newest first.",
        discussion: "The same history `git log` shows, with flowdir's transitions spelled out. With no instance: the current folder's, or every instance under the root."
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String?

    @Argument(help: "Only commits that changed this node.")
    var node: String?

    @Option(name: .shortAndLong, help: "At most this many commits.")
    var limit: Int = 20

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    @Flag(help: "Print as JSON.")
    var json = false

    struct Row: Encodable {
        var instance: String
        var commit: String
        var time: String
        var author: String
        var summary: String
        var event: String?
        var transitions: [String]
    }

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        let ctx = try Context.load()
        let paths: [String]
        if let instance {
            paths = [try ctx.resolve(instance, root: root)]
        } else if ctx.reader.isInstance(".") {
            paths = ["."]
        } else {
            paths = ctx.instances(root: root)
        }
        if let node, let path = paths.first {
            let s = try ctx.reader.read(path)
            if s.states[node] == nil, s.graph?.node(node) == nil {
                throw CommandError("\(path) has no node '\(node)'",
                                   hint: Suggest.hint(for: node, in: s.graph?.order ?? Array(s.states.keys)) ?? "`\(Shell.command(["flowdir", "show", path]))` lists its nodes")
            }
        }
        var entries = try paths.flatMap { try InstanceHistory.entries($0, node: node, limit: limit) }
        entries.sort { $0.time > $1.time }
        entries = Array(entries.prefix(limit))
        if json {
            return try Output.json(entries.map {
                Row(instance: $0.instance, commit: $0.commit.id.hex, time: $0.time.iso8601, author: $0.commit.author.name,
                    summary: $0.commit.summary, event: $0.message?.event, transitions: $0.message?.transitions.map(\.description) ?? [])
            })
        }
        let t = ctx.terminal
        let now = ctx.clock.now()
        if entries.isEmpty { Output.line("No history yet.") }
        for e in entries {
            var line = t.paint(e.commit.id.short, "33") + "  " + e.time.iso8601 + "  " + t.paint(RelativeTime.describe(e.time, now: now), "2")
            line += "  " + e.commit.author.name + "  "
            if paths.count > 1 { line += t.paint(Path.basename(e.instance), "1") + ": " }
            Output.line(line + e.commit.summary)
            for tr in e.message?.transitions ?? [] where node == nil || tr.node == node {
                Output.line("    " + t.paint(tr.description, "2"))
            }
        }
    }
}
