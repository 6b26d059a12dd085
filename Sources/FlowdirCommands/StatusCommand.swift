#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime

/// `flowdir status`: the home screen.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Active instances, running jobs, pending awaits, and which flowdir is at work where."
    )

    @Option(help: "Where to look (default: the config's roots, or the current folder).")
    var root: String?

    @Flag(help: "Print as JSON.")
    var json = false

    struct Report: Encodable {
        var roots: [String]
        var instances: Int
        var active: [Item]
        var runningJobs: Int
        var pendingAwaits: [String]
        var busy: [String]
        /// Per root: the watchers running for it.
        var watchers: [String: [String]]
    }

    struct Item: Encodable {
        var title: String
        var path: String
        var status: String
        var steps: String
    }

    func run() throws {
        let ctx = try Context.load()
        let paths = InstanceListing.paths(ctx, root: root)
        var active: [Item] = []
        var running = 0
        var awaits: [String] = []
        var busy: [String] = []
        for path in paths {
            guard let s = try? ctx.reader.read(path), !s.record.archived else { continue }
            let summary = s.summary
            running += s.states.values.filter { $0.state.isActive }.count
            awaits += s.pendingAwaits.map { Path.join(path, "inbox/" + $0) }
            if summary.status.isActive {
                active.append(Item(title: s.record.title, path: path, status: summary.status.rawValue, steps: summary.steps))
            }
            if let holder = Self.lockHolder(path) { busy.append("\(path): \(holder)") }
        }
        var watchers: [String: [String]] = [:]
        for r in ctx.roots(root) { watchers[r] = WatchRegistration.watchers(of: Files.realPath(r) ?? r) }
        let report = Report(roots: ctx.roots(root), instances: paths.count, active: active, runningJobs: running,
                            pendingAwaits: awaits, busy: busy, watchers: watchers)
        if json { return try Output.json(report) }
        let t = ctx.terminal
        Output.line("\(paths.count) instance\(paths.count == 1 ? "" : "s") under \(report.roots.joined(separator: ", ")) · "
                    + "\(active.count) active · \(running) running job\(running == 1 ? "" : "s") · "
                    + "\(awaits.count) waiting for you")
        if !active.isEmpty {
            Output.line()
            Table.print(header: ["ACTIVE", "STATUS", "STEPS", "PATH"],
                        rows: active.map { [$0.title, $0.status, $0.steps, $0.path] }, terminal: t) { column, value in
                column == 1 ? StatusStyle.paint(value, t) : value
            }
        }
        if !awaits.isEmpty {
            Output.line()
            Output.line(t.paint("Waiting for you:", "1"))
            for a in awaits { Output.line("  " + TerminalText.oneLine(a)) }
        }
        Output.line()
        Output.line(busy.isEmpty ? "No flowdir is at work on these instances now." : t.paint("At work now:", "1"))
        for b in busy { Output.line("  " + TerminalText.oneLine(b)) }
        for r in report.roots {
            let w = watchers[r] ?? []
            Output.line(w.isEmpty ? "No watcher for \(r) (start one with `\(Shell.command(["flowdir", "watch", r]))` or `flowdir service install`)."
                                  : "Watched: \(r) by " + TerminalText.oneLine(w.joined(separator: "; ")))
        }
    }

    /// Who holds an instance's lock right now, if anyone.
    static func lockHolder(_ path: String) -> String? {
        let file = Path.join(path, ".flowdir/lock")
        guard Files.exists(file) else { return nil }
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // A shared lock succeeds only when no writer holds it.
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return nil
        }
        let text = (try? LocalFileSystem().readFile(file, limit: 4096)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
        return text.split(separator: "\n").first.map(String.init) ?? "?"
    }
}
