import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir rollback <instance> <rev>`: files as they were, in a new commit.
struct RollbackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollback",
        abstract: "Restore an instance's files as they were at a commit, as a new commit.",
        discussion: "History is never rewritten: the rollback is itself a commit, and can be rolled back. REV is anything git understands: a commit id (or its start), HEAD~2, …"
    )

    @Argument(help: "An instance: a path, an id, or a title.")
    var instance: String

    @Argument(help: "The commit to go back to.")
    var revision: String

    @Option(help: "Where to look up names (default: the config's roots, or the current folder).")
    var root: String?

    func run() async throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
        guard try rollBack(ctx, path) else { return }
        // Old content freed here comes back from the sync remote (docs/storage.md).
        let repo = try GitRepository.open(path)
        guard let head = try repo.head(), repo.hasRemote(ctx.config.syncRemote) else { return }
        let store = ContentStore(gitDirectory: repo.gitDirectory)
        guard try repo.pointers(inTree: head.tree).values.contains(where: { !store.has($0) }) else { return }
        do {
            let got = try await StorageGet.get(path, node: nil, all: false, remote: ctx.config.syncRemote, now: ctx.clock.now().seconds)
            Output.line("Fetched \(got.fetched) large file\(got.fetched == 1 ? "" : "s") (\(ByteCount(Int(got.bytes)))) from \(ctx.config.syncRemote).")
        } catch {
            Output.error("some large files of that commit are not on this machine: \(error)\n  hint: `\(Shell.command(["flowdir", "storage", "get", path]))` once the remote can be reached")
        }
    }

    /// The rollback commit; false when there was nothing to do.
    func rollBack(_ ctx: Context, _ path: String) throws -> Bool {
        let open = try OpenInstance.open(path, purpose: "rollback", reader: ctx.reader, clock: ctx.clock)
        defer { try? open.close() }
        let repo = open.store.repository
        let target: ObjectID
        do { target = try repo.resolve(revision: revision) } catch {
            throw CommandError("'\(revision)' is not a commit of \(path): \(error.message)", hint: "`\(Shell.command(["flowdir", "history", path]))` lists its commits")
        }
        let commit = try repo.commit(target)
        guard let head = open.store.head, head.tree != commit.tree else {
            Output.line("\(path) is already as it was at \(target.short); nothing to do.")
            return false
        }
        let before = open.snapshot.states
        let restored = try repo.changedFiles(from: head.tree, to: commit.tree).count
        // The transitions this causes, read from the state files as they will be.
        var transitions: [Transition] = []
        let ids = Set(before.keys).union(open.snapshot.graph?.order ?? [])
        var after: [String: NodeStateRecord] = [:]
        for id in ids {
            if let bytes = try repo.blob(at: InstancePaths.state(id), inTree: commit.tree),
               case .success(let doc) = InstanceCodec.document(bytes, file: InstancePaths.state(id)),
               let record = try? InstanceCodec.decodeState(doc, file: InstancePaths.state(id)) {
                after[id] = record
            }
        }
        for id in ids.sorted() where before[id]?.state.name != after[id]?.state.name {
            transitions.append(Transition(node: id, from: before[id]?.state.name, to: after[id]?.state.name ?? "removed",
                                          run: after[id]?.run ?? 0))
        }
        try open.store.commitTree(commit.tree, message: CommitMessage(
            summary: "Roll back to \(target.short): \(commit.summary)", event: "rollback", transitions: transitions,
            body: "Restores every file as it was at \(target.hex)."), author: open.store.personSignature())
        Output.line("Rolled \(path) back to \(target.short) (\(commit.summary)): \(restored) file\(restored == 1 ? "" : "s") restored, as a new commit.")
        return true
    }
}

import FlowdirTemplates
