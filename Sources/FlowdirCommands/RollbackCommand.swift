import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir rollback <instance> <rev>`: files as they were, in a new commit.
struct RollbackCommand: ParsableCommand {
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

    func run() throws {
        let ctx = try Context.load()
        let path = try ctx.resolve(instance, root: root)
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
            return
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
    }
}

import FlowdirTemplates
