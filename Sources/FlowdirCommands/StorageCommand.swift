#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// `flowdir storage`: large files kept beside git (docs/storage.md) — what
/// they take, fetching them, pinning them, and freeing space safely.
struct StorageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage",
        abstract: "See and free the space large files take; fetch and pin them.",
        discussion: """
            Outputs and answers of at least storage.bigFile (512KB) are committed as Git LFS \
            pointers; their content is kept once in .git/lfs/objects/ and on the sync remote. \
            `free` drops only content the remote holds (checked at that moment), never what is \
            pinned, not yet synced, an answer not yet taken, or a node's newest run.
            """,
        subcommands: [StorageUsage.self, StorageFree.self, StorageGet.self, StoragePin.self, StorageUnpin.self, StorageVerify.self],
        defaultSubcommand: StorageUsage.self
    )
}

/// What the storage subcommands share: which instances, which remote.
struct StorageScope: ParsableArguments {
    @Argument(help: "Instances: paths, ids or titles (default: every one under the roots).")
    var instances: [String] = []

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    @Flag(help: "Print the result as JSON.")
    var json = false

    func paths(_ ctx: Context) throws -> [String] {
        instances.isEmpty ? ctx.instances(root: root) : try instances.map { try ctx.resolve($0, root: root) }
    }
}

/// `<instance>[/<node>]` for get, pin and unpin.
struct StorageTarget: ParsableArguments {
    @Argument(help: "An instance, or instance/node.")
    var target: String

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func resolve(_ ctx: Context) throws -> (path: String, node: String?) {
        try StorageSupport.target(target, ctx: ctx, root: root)
    }
}

enum StorageSupport {
    static func remoteTip(_ repo: GitRepository, remote: String) -> ObjectID? {
        guard let branch = repo.headBranch() else { return nil }
        return try? repo.resolve(revision: "refs/remotes/\(remote)/\(branch)")
    }

    static func scan(_ path: String, remote: String, now: Double, history: Bool = true) throws -> InstanceContent {
        let repo = try GitRepository.open(path)
        return try InstanceContent.scan(path, repo: repo, remoteTip: remoteTip(repo, remote: remote), now: now, history: history)
    }

    /// `instance` or `instance/node`, resolved.
    static func target(_ text: String, ctx: Context, root: String?) throws -> (path: String, node: String?) {
        if let path = try? ctx.resolve(text, root: root) { return (path, nil) }
        guard let slash = text.lastIndex(of: "/") else { return (try ctx.resolve(text, root: root), nil) }
        let node = String(text[text.index(after: slash)...])
        return (try ctx.resolve(String(text[..<slash]), root: root), node)
    }
}

struct StorageUsage: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "usage", abstract: "Per instance: git, content here, content elsewhere, pinned, freeable.")

    @OptionGroup var scope: StorageScope

    struct Row: Encodable {
        var instance: String
        var gitBytes: Int64 = 0
        var contentHere: Int64 = 0
        var contentNotHere: Int64 = 0
        var pinned: Int64 = 0
        var freeable: Int64 = 0
    }

    /// One instance's row (the Settings page shows the same).
    static func row(_ path: String, ctx: Context) throws -> Row {
        let c = try StorageSupport.scan(path, remote: ctx.config.syncRemote, now: ctx.clock.now().seconds)
        var sizes: [String: Int64] = [:]
        for r in c.references { sizes[r.oid] = r.size }
        let here = c.held.filter { sizes[$0.key] != nil }.values.reduce(0, +)
        let notHere = Set(c.current.values.filter { c.held[$0.oid] == nil }.map(\.oid)).reduce(Int64(0)) { $0 + (sizes[$1] ?? 0) }
        let pinned = Set(c.references.filter(\.pinned).map(\.oid)).filter { c.held[$0] != nil }.reduce(Int64(0)) { $0 + (c.held[$1] ?? 0) }
        // What free could drop if the remote holds everything already synced.
        let pushed = Set(c.references.filter { !$0.unpushed }.map(\.oid))
        let plan = FreePlan.plan(c.references.filter { c.held[$0.oid] != nil }, onRemote: pushed, options: .init(), now: ctx.clock.now().seconds)
        return Row(instance: path, gitBytes: c.gitBytes, contentHere: here, contentNotHere: notHere, pinned: pinned,
                   freeable: plan.drop.reduce(0) { $0 + (c.held[$1.oid] ?? 0) })
    }

    func run() async throws {
        let ctx = try Context.load()
        let rows = try scope.paths(ctx).map { try Self.row($0, ctx: ctx) }
        if scope.json { return try Output.json(rows) }
        func b(_ n: Int64) -> String { ByteCount(Int(n)).description }
        for r in rows {
            Output.line("\(TerminalText.oneLine(r.instance)): git \(b(r.gitBytes)), content here \(b(r.contentHere)), "
                        + "not here \(b(r.contentNotHere)), pinned \(b(r.pinned)), free could reclaim \(b(r.freeable))")
        }
        let total = rows.reduce(Int64(0)) { $0 + $1.gitBytes + $1.contentHere }
        Output.line("Total on this machine: \(b(total)) in \(rows.count) instance\(rows.count == 1 ? "" : "s").")
    }
}

struct StorageFree: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "free",
        abstract: "Drop local content the sync remote holds, newest runs kept.",
        discussion: "The remote is asked, at that moment, which content it holds; nothing else is dropped.")

    @OptionGroup var scope: StorageScope

    @Flag(help: "Say what would be dropped; drop nothing.")
    var dryRun = false

    @Option(help: "Keep content used more recently than this (30d, 12h).")
    var olderThan: String?

    @Option(help: "Keep each node's newest N runs (at least 1).")
    var keepRuns = 1

    @Option(help: "Stop once the content kept here is at most this size (10GB).")
    var to: String?

    @Flag(help: "Check the remote's copies by their SHA-256 (reading each), not only by their size.")
    var verify = false

    struct Dropped: Encodable {
        var instance: String
        var node: String?
        var run: Int?
        var path: String
        var oid: String
        var size: Int64
    }

    struct Report: Encodable {
        var dropped: [Dropped] = []
        var kept: [String: Int] = [:]
        var bytesFreed: Int64 = 0
        var dryRun: Bool
        /// Instances where nothing was dropped, and why (their remote could not be asked).
        var problems: [String] = []
    }

    /// Drops (or, with `dryRun`, lists) the content of `paths` that `options`
    /// let go and the sync remote holds, asked now.
    static func free(_ paths: [String], remote: String, options: FreePlan.Options, dryRun: Bool, verify: Bool,
                     now: Double) async throws -> Report {
        var report = Report(dryRun: dryRun)
        for path in paths {
            let c = try StorageSupport.scan(path, remote: remote, now: now)
            let held = c.references.filter { c.held[$0.oid] != nil }
            guard !held.isEmpty else { continue }
            let repo = try GitRepository.open(path)
            // Asked now: a copy the remote had yesterday is not a copy.
            var onRemote = Set<String>()
            if repo.hasRemote(remote) {
                var pointers: [String: LFSPointer] = [:]
                for r in held { pointers[r.oid] = LFSPointer(oid: r.oid, size: r.size) }
                do {
                    let target = try ContentRemotes.forGitRemote(remote, of: repo, instance: path)
                    onRemote = verify ? try await target.holdingVerified(Array(pointers.values), scratch: repo.gitDirectory + "/lfs/tmp")
                                      : try await target.holding(Array(pointers.values))
                } catch {
                    report.problems.append("\(path): \(error); nothing dropped there")
                    continue
                }
            }
            let plan = FreePlan.plan(held, onRemote: onRemote, options: options, now: now)
            for k in plan.kept { report.kept[k.why.rawValue, default: 0] += 1 }
            let store = ContentStore(gitDirectory: repo.gitDirectory)
            for d in plan.drop {
                var freed: Int64 = 0
                if !dryRun { freed = try store.drop(d.oid) } else { freed = c.held[d.oid] ?? 0 }
                report.bytesFreed += freed
                for r in d.references {
                    report.dropped.append(Dropped(instance: path, node: r.node, run: r.run, path: r.path, oid: d.oid, size: d.size))
                }
            }
        }
        return report
    }

    func run() async throws {
        let ctx = try Context.load()
        guard keepRuns >= 1 else { throw CommandError("--keep-runs must be at least 1: a node's current outputs are always kept") }
        var options = FreePlan.Options(keepRuns: keepRuns)
        if let olderThan {
            guard let s = FlowDuration(parsing: olderThan)?.seconds else { throw CommandError("--older-than \(olderThan): not a duration like 30d or 12h") }
            options.olderThan = s
        }
        if let to {
            guard let n = ConfigDecoder.size(to) else { throw CommandError("--to \(to): not a size like 10GB or 500MB") }
            options.to = Int64(n)
        }
        let report = try await Self.free(try scope.paths(ctx), remote: ctx.config.syncRemote, options: options, dryRun: dryRun,
                                         verify: verify, now: ctx.clock.now().seconds)
        for problem in report.problems { Output.error(problem) }
        if scope.json { return try Output.json(report) }
        var lastInstance = ""
        for d in report.dropped {
            if d.instance != lastInstance { Output.line(TerminalText.oneLine(d.instance) + ":"); lastInstance = d.instance }
            Output.line("  \(TerminalText.oneLine(d.node ?? "-")) run \(d.run.map(String.init) ?? "-"): \(TerminalText.oneLine(d.path)) (\(ByteCount(Int(d.size))))")
        }
        let verb = dryRun ? "Would free" : "Freed"
        Output.line("\(verb) \(ByteCount(Int(report.bytesFreed))) (\(Set(report.dropped.map(\.oid)).count) file\(report.dropped.count == 1 ? "" : "s")).")
        for (why, n) in report.kept.sorted(by: { $0.key < $1.key }) { Output.line("  kept \(n): \(why)") }
    }
}

struct StorageGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Fetch the content of an instance's (or a node's) large files from the sync remote.")

    @OptionGroup var target: StorageTarget

    @Flag(help: "Every run's content, not only the current files.")
    var all = false

    @Option(help: "That run's content of the node (instance/node), not only the current files.")
    var run: Int?

    @Flag(help: "Print the result as JSON.")
    var json = false

    struct Result: Encodable {
        var fetched: Int
        var bytes: Int64
        var placed: [String]
    }

    func run() async throws {
        let ctx = try Context.load()
        let (path, node) = try target.resolve(ctx)
        if let run {
            guard node != nil else { throw CommandError("--run \(run) needs a node: `flowdir storage get <instance>/<node> --run \(run)`") }
            guard !all else { throw CommandError("--run and --all: give one") }
            guard run >= 1 else { throw CommandError("--run \(run): runs are numbered from 1") }
        }
        let result = try await Self.get(path, node: node, all: all, run: run, remote: ctx.config.syncRemote, now: ctx.clock.now().seconds)
        if json { return try Output.json(result) }
        Output.line("Fetched \(result.fetched) file\(result.fetched == 1 ? "" : "s") (\(ByteCount(Int(result.bytes)))); \(result.placed.count) put in place.")
    }

    static func get(_ path: String, node: String?, all: Bool, run: Int? = nil, remote: String, now: Double) async throws -> Result {
        // The current files only: what HEAD names, no walk of the history.
        let c = try StorageSupport.scan(path, remote: remote, now: now, history: all || run != nil)
        let repo = try GitRepository.open(path)
        let store = ContentStore(gitDirectory: repo.gitDirectory)
        func wanted(_ p: String) -> Bool { node.map { InstanceContent.node(of: p) == $0 } ?? true }
        var pointers: [String: LFSPointer] = [:]
        for (p, ptr) in c.current where wanted(p) { pointers[ptr.oid] = ptr }
        if all { for r in c.references where wanted(r.path) { pointers[r.oid] = LFSPointer(oid: r.oid, size: r.size) } }
        if let run {
            // That run only: its content goes to the store (the working tree keeps the current files).
            pointers = [:]
            for r in c.references where wanted(r.path) && r.run == run { pointers[r.oid] = LFSPointer(oid: r.oid, size: r.size) }
            guard !pointers.isEmpty else {
                throw CommandError("\(path): run \(run) of '\(node ?? "")' has no large file\n  hint: `flowdir history \(path)` lists the runs")
            }
        }
        let missing = pointers.values.filter { !store.has($0) }
        if !missing.isEmpty {
            let target = try ContentRemotes.forGitRemote(remote, of: repo, instance: path)
            try await target.download(Array(missing), into: store)
        }
        // Pointer text in the working tree becomes the file, under the instance's lock.
        let open = try InstanceStore.open(path, purpose: "storage get", lockTimeout: 30)
        defer { try? open.close() }
        let placed = try open.placeContent(paths: Array(c.current.keys.filter(wanted)))
        return Result(fetched: missing.count, bytes: missing.reduce(0) { $0 + $1.size }, placed: placed)
    }
}

struct StoragePin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pin", abstract: "Keep an instance's (or a node's) files on this machine: fetch them, and never free them.")

    @OptionGroup var target: StorageTarget

    func run() async throws {
        let ctx = try Context.load()
        let (path, node) = try target.resolve(ctx)
        try InstanceContent.setPinned(node, true, in: path)
        let r = try await StorageGet.get(path, node: node, all: false, remote: ctx.config.syncRemote, now: ctx.clock.now().seconds)
        Output.line("Pinned \(TerminalText.oneLine(target.target)): kept on this machine (\(r.fetched) fetched).")
    }
}

struct StorageUnpin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unpin", abstract: "Let `storage free` drop an instance's (or a node's) files again.")

    @OptionGroup var target: StorageTarget

    func run() async throws {
        let ctx = try Context.load()
        let (path, node) = try target.resolve(ctx)
        try InstanceContent.setPinned(node, false, in: path)
        Output.line("Unpinned \(TerminalText.oneLine(target.target)).")
    }
}

struct StorageVerify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "verify", abstract: "Re-hash the content kept here; name any that changed.")

    @OptionGroup var scope: StorageScope

    struct Bad: Encodable {
        var instance: String
        var oid: String
        var paths: [String]
        /// Not a changed object but a changed pointer or `.gitattributes` line: what is wrong.
        var problem: String? = nil
    }

    func run() async throws {
        let ctx = try Context.load()
        var bad: [Bad] = []
        var checked = 0
        for path in try scope.paths(ctx) {
            let c = try StorageSupport.scan(path, remote: ctx.config.syncRemote, now: ctx.clock.now().seconds)
            let store = ContentStore(gitDirectory: try GitRepository.open(path).gitDirectory)
            var paths: [String: [String]] = [:]
            var sizes: [String: Int64] = [:]
            for r in c.references { paths[r.oid, default: []].append(r.path); sizes[r.oid] = r.size }
            bad += try Self.pointerProblems(path, store: store)
            for oid in c.held.keys.sorted() {
                checked += 1
                // One no commit names (a kill mid-ingest) is checked by its own length.
                var st = stat()
                let size = sizes[oid] ?? (lstat(store.path(of: oid), &st) == 0 ? Int64(st.st_size) : -1)
                guard let p = LFSPointer(oid: oid, size: size), (try? store.verify(p)) == true else {
                    bad.append(Bad(instance: path, oid: oid, paths: paths[oid] ?? []))
                    continue
                }
            }
        }
        if scope.json { try Output.json(bad) } else {
            for b in bad {
                if let problem = b.problem {
                    Output.line("\(TerminalText.oneLine(b.instance)): \(TerminalText.oneLine(problem))")
                    continue
                }
                Output.line("\(TerminalText.oneLine(b.instance)): sha256:\(b.oid.prefix(12))… does not match its content"
                            + (b.paths.isEmpty ? " (referenced by no commit)" : " (\(b.paths.map(TerminalText.oneLine).joined(separator: ", ")))"))
            }
            let changed = bad.filter { $0.problem == nil }.count, edited = bad.count - changed
            Output.line("Checked \(checked) file\(checked == 1 ? "" : "s"): \(changed == 0 ? "all intact" : "\(changed) changed; get each again with `flowdir storage get`")"
                        + (edited == 0 ? "." : "; \(edited) pointer or .gitattributes problem\(edited == 1 ? "" : "s") (never trusted: fix them with git)."))
        }
        if !bad.isEmpty { throw ExitCode(1) }
    }

    /// What a person's git may have changed by hand in HEAD: a pointer whose
    /// `.gitattributes` line is gone (git then shows the real file as
    /// changed), a pattern of their own sending files through the filter,
    /// a pointer whose size is not that of the content here.
    static func pointerProblems(_ path: String, store: ContentStore) throws -> [Bad] {
        let repo = try GitRepository.open(path)
        guard let head = try repo.head() else { return [] }
        var text = ""
        if let e = try repo.entry(at: LFSAttributes.path, inTree: head.tree), !e.isTree { text = String(decoding: try repo.readBlob(e.id), as: UTF8.self) }
        let marked = LFSAttributes.paths(in: text)
        var out: [Bad] = []
        for line in LFSAttributes.foreignLines(in: text) {
            out.append(Bad(instance: path, oid: "", paths: [LFSAttributes.path],
                           problem: ".gitattributes has `\(line)`, not a line of flowdir's: git would turn the files it matches into pointers that flowdir "
                               + "commits as ordinary files (git status shows them changed); remove it"))
        }
        for (file, p) in try repo.pointersByContent(inTree: head.tree).sorted(by: { $0.key < $1.key }) {
            if !marked.contains(file) {
                out.append(Bad(instance: path, oid: p.oid, paths: [file],
                               problem: "\(file) is committed as a Git LFS pointer but .gitattributes does not mark it (its line was removed): "
                                   + "git shows the file changed; put back the line `\(LFSAttributes.line(for: file))`"))
            }
            var st = stat()
            if lstat(store.path(of: p.oid), &st) == 0, Int64(st.st_size) != p.size {
                out.append(Bad(instance: path, oid: p.oid, paths: [file],
                               problem: "\(file)'s pointer says \(p.size) bytes where its content (sha256:\(p.oid.prefix(12))…) has \(st.st_size): "
                                   + "the pointer was changed; `git log -p -- \(file)` shows by whom"))
            }
        }
        return out
    }
}
