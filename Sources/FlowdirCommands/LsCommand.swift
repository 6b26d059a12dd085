import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir ls`: the workflows list.
struct LsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List instances: title, status, steps, when updated, pending awaits.",
        discussion: """
            Each instance is listed once, by a path that is not a symbolic link: one reached \
            only through a link is listed by its real path. Under /, the kernel's folders \
            (/proc, /sys, /dev, /run) are not searched.

            Exit codes: 0 the list was printed (also when it is empty); 1 the config is \
            invalid; 2 a root is not a folder or does not exist; 64 the command line is wrong.
            """
    )

    enum Filter: String, ExpressibleByArgument, CaseIterable { case all, active, done, failed }
    enum Sort: String, ExpressibleByArgument, CaseIterable { case recent, name }

    @Argument(help: "Where to look (default: the config's roots, or the current folder).", completion: .directory)
    var root: String?

    @Option(help: "all, active, done or failed.")
    var filter: Filter = .all

    @Option(help: "recent (last updated first) or name.")
    var sort: Sort = .recent

    @Option(help: "Only instances whose title, folder, template or id contains TEXT.")
    var search: String?

    @Flag(help: "Include archived instances.")
    var archived = false

    @Flag(help: "Print the list as JSON.")
    var json = false

    struct Row: Codable {
        var title: String
        var id: String
        var path: String
        var status: String
        var steps: String
        var done: Int
        var total: Int
        var updatedAt: String?
        var awaits: Int
        /// Of those, the ones whose await is `blocking` (the default): the row's red dot.
        var blocking: Int = 0
        var archived: Bool
        var template: String
        var problem: String?
        /// A thumbnail of the latest image output (`flowdir serve`).
        var thumb: String?
    }

    func run() throws {
        let ctx = try Context.load()
        let now = ctx.clock.now()
        for r in ctx.roots(root) where !ctx.reader.fileSystem.isDirectory(r) {
            throw CommandError("\(r) is not a folder\(Files.exists(r) ? "" : " (it does not exist)")",
                               hint: "give the folder that holds your instances" + (root == nil ? " (or fix `roots` in the config)" : ""),
                               exitCode: 2)
        }
        let rows = Self.rows(ctx, paths: InstanceListing.paths(ctx, root: root), filter: filter, sort: sort, search: search,
                             archived: archived).map { ($0.row, $0.updated) }
        if json { return try Output.json(rows.map(\.0)) }
        guard !rows.isEmpty else {
            Output.line("No instances\(search.map { " matching '\($0)'" } ?? "") under \(ctx.roots(root).joined(separator: ", ")). Create one with `flowdir new <template>`.")
            return
        }
        let t = ctx.terminal
        let table = rows.map { row, updated in
            [row.title + (row.archived ? " (archived)" : ""), row.status, row.steps,
             row.updatedAt == nil ? "-" : RelativeTime.describe(updated, now: now),
             row.awaits == 0 ? "" : String(row.awaits), row.path]
        }
        Table.print(header: ["TITLE", "STATUS", "STEPS", "UPDATED", "AWAITS", "PATH"], rows: table, terminal: t) { column, value in
            column == 1 ? StatusStyle.paint(value, t) : value
        }
        for (row, _) in rows { if let p = row.problem { Output.error("\(row.path): \(p)") } }
    }

    /// The rows `ls` lists, filtered and sorted, each with the snapshot read for it.
    static func rows(_ ctx: Context, paths: [String], filter: Filter, sort: Sort, search: String?, archived: Bool)
        -> [(row: Row, updated: Timestamp, snapshot: InstanceSnapshot?)]
    {
        let rows = paths.map { row(ctx, $0) }
        return sorted(rows.filter { shown($0.row, filter: filter, search: search, archived: archived) }, by: sort)
    }

    /// One instance's row; one that cannot be read is a row saying why.
    static func row(_ ctx: Context, _ path: String) -> (row: Row, updated: Timestamp, snapshot: InstanceSnapshot?) {
        do {
            let s = try ctx.reader.read(path)
            let summary = s.summary
            return (Row(title: s.record.title, id: s.record.id, path: path, status: summary.status.rawValue,
                        steps: summary.steps, done: summary.finishedSteps, total: summary.totalSteps, updatedAt: s.updatedAt?.iso8601,
                        awaits: s.pendingAwaits.count, blocking: s.pendingAwaits.filter { s.graph?.node($0)?.awaitSpec?.blocking ?? true }.count,
                        archived: s.record.archived, template: s.record.template,
                        problem: s.workflow.isValid ? nil : "workflow.yaml is invalid"),
                    s.updatedAt ?? Timestamp(seconds: 0), s)
        } catch {
            // One broken instance never hides the others.
            return (Row(title: Path.basename(path), id: "", path: path, status: "unreadable", steps: "-", done: 0, total: 0,
                        updatedAt: nil, awaits: 0, archived: false, template: "", problem: "\(error)"),
                    Timestamp(seconds: 0), nil)
        }
    }

    static func shown(_ row: Row, filter: Filter, search: String?, archived: Bool) -> Bool {
        guard archived || !row.archived else { return false }
        switch filter {
        case .all: break
        case .active: guard InstanceSummary.Status(rawValue: row.status)?.isActive ?? false else { return false }
        case .done: guard row.status == "done" else { return false }
        case .failed: guard row.status == "failed" || row.status == "unreadable" else { return false }
        }
        guard let search, !search.isEmpty else { return true }
        let q = search.lowercased()
        return [row.title, row.path, row.template, row.id].contains { $0.lowercased().contains(q) }
    }

    static func sorted<T>(_ rows: [T], by sort: Sort, _ key: (T) -> (row: Row, updated: Timestamp)) -> [T] {
        switch sort {
        case .recent: rows.sorted { (key($0).updated, key($1).row.title) > (key($1).updated, key($0).row.title) }
        case .name: rows.sorted { key($0).row.title.lowercased() < key($1).row.title.lowercased() }
        }
    }

    static func sorted(_ rows: [(row: Row, updated: Timestamp, snapshot: InstanceSnapshot?)], by sort: Sort)
        -> [(row: Row, updated: Timestamp, snapshot: InstanceSnapshot?)]
    {
        sorted(rows, by: sort) { ($0.row, $0.updated) }
    }
}

/// The instances under the roots as `ls`, `status` and `inbox` list them:
/// each once, by a path that is not a symbolic link (a link's own instance
/// is found beside it, or shown by its real path: the path every command,
/// `delete` included, takes as it is), and `/` however it is written.
enum InstanceListing {
    static func paths(_ ctx: Context, root: String?) -> [String] {
        var order: [String] = []
        var shown: [String: (path: String, viaLink: Bool)] = [:]
        for r in ctx.roots(root) {
            // `//` and `/./` are `/`, whose kernel folders are not searched.
            let r = Files.realPath(r) == "/" ? "/" : r
            var found = ctx.reader.instances(under: r)
            if found.isEmpty, let enclosing = ctx.reader.enclosingInstance(of: r) { found = [enclosing] }
            for path in found {
                let real = Files.realPath(path) ?? path
                let viaLink = Files.isSymbolicLink(Self.lastComponent(path))
                switch shown[real] {
                case nil: order.append(real)
                case let seen? where seen.viaLink && !viaLink: break
                default: continue
                }
                shown[real] = (viaLink ? real : path, viaLink)
            }
        }
        return order.compactMap { shown[$0]?.path }
    }

    /// `a/b/`, `a/b/.` → `a/b`: the path whose last part names the folder itself.
    static func lastComponent(_ path: String) -> String {
        var p = path
        while true {
            if p.count > 1, p.hasSuffix("/") { p.removeLast() } else if p.count > 2, p.hasSuffix("/.") { p.removeLast(2) } else { return p }
        }
    }
}

/// Columns padded to their widest cell.
enum Table {
    static func print(header: [String], rows: [[String]], terminal: Terminal,
                      style: (Int, String) -> String = { $1 }) {
        // A cell is one line, whatever a title holds (see `TerminalText`).
        let rows = rows.map { $0.map(TerminalText.oneLine) }
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String], styled: Bool) -> String {
            cells.enumerated().map { i, cell in
                let pad = i == cells.count - 1 ? "" : String(repeating: " ", count: widths[i] - cell.count)
                return (styled ? style(i, cell) : cell) + pad
            }.joined(separator: "  ")
        }
        Output.line(terminal.paint(line(header, styled: false), "1"))
        for row in rows { Output.line(line(row, styled: true)) }
    }
}

/// Colours for states and statuses, one place.
enum StatusStyle {
    static func paint(_ status: String, _ t: Terminal) -> String {
        switch status {
        case "done", "succeeded": t.paint(status, "32")
        case "failed", "unreadable", "cancelled": t.paint(status, "31")
        case "running", "runningLocal", "runningRemote", "queuedRemote", "downloading": t.paint(status, "36")
        case "waiting", "awaitingUser": t.paint(status, "33")
        case "blocked": t.paint(status, "2")
        default: status
        }
    }
}
