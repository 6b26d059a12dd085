#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirTemplates

/// `<await>` on the command line: `<instance>/<node>`, an await id (or a
/// unique prefix of one), or a `flowdir://` link (docs/commands.md).
struct AwaitTarget {
    var instance: String
    var node: String
    /// The open question, when there is one.
    var question: AwaitRecord?
    var file: String { Path.join(instance, InstancePaths.awaitFile(node)) }

    static func resolve(_ text: String, ctx: Context, root: String?) throws -> AwaitTarget {
        if AwaitLink.isLink(text) { return try resolve(link: text, ctx: ctx, root: root) }
        if let slash = text.lastIndex(of: "/"), slash != text.startIndex {
            let node = String(text[text.index(after: slash)...])
            let instance = try ctx.resolve(String(text[..<slash]), root: root)
            return try target(instance, node: node, ctx: ctx)
        }
        // An await id, or a unique prefix of one.
        let lowered = text.lowercased()
        var hits: [AwaitTarget] = []
        for path in ctx.instances(root: root) {
            guard let awaits = try? ctx.reader.awaits(path, includeDone: false) else { continue }
            for (_, a) in awaits.open where a.id == lowered || (lowered.count >= 4 && a.id.hasPrefix(lowered)) {
                hits.append(AwaitTarget(instance: path, node: a.node, question: a))
            }
        }
        if hits.count == 1 { return hits[0] }
        if hits.count > 1 {
            throw CommandError("'\(text)' matches \(hits.count) awaits: " + hits.map { "\(Path.basename($0.instance))/\($0.node)" }.joined(separator: ", "),
                               hint: "give more of the id, or name it as <instance>/<node>")
        }
        throw CommandError("no open await matches '\(text)' under \(ctx.roots(root).joined(separator: ", "))",
                           hint: "name it as <instance>/<node> (e.g. my-photo/mask1), an await id, or a flowdir:// link; `flowdir inbox` lists them")
    }

    static func target(_ instance: String, node: String, ctx: Context) throws -> AwaitTarget {
        let awaits = try ctx.reader.awaits(instance, includeDone: false)
        if let (_, a) = awaits.open.first(where: { $0.await.node == node }) {
            return AwaitTarget(instance: instance, node: node, question: a)
        }
        let nodes = (try? ctx.reader.fileSystem.listDirectory(Path.join(instance, InstancePaths.nodes))) ?? []
        guard nodes.contains(node) else {
            throw CommandError("\(instance) has no node '\(node)'", hint: Suggest.hint(for: node, in: nodes.sorted()))
        }
        return AwaitTarget(instance: instance, node: node, question: nil)
    }

    /// `flowdir://<instance-id>/node/<node>?await=<id>`, from a cold start:
    /// the instance is found by id under the roots.
    static func resolve(link text: String, ctx: Context, root: String?) throws -> AwaitTarget {
        let link: AwaitLink
        switch AwaitLink.parse(text) {
        case .success(let l): link = l
        case .failure(let m): throw CommandError(m.description)
        }
        guard let instance = ctx.instance(id: link.instanceID, root: root) else {
            throw CommandError("no instance with id \(link.instanceID) under \(ctx.roots(root).joined(separator: ", "))",
                               hint: "pass --root, or add its folder to `roots` in the config")
        }
        let awaits = try ctx.reader.awaits(instance)
        if let (_, a) = awaits.open.first(where: { $0.await.node == link.node }), link.awaitID == nil || link.awaitID == a.id {
            return AwaitTarget(instance: instance, node: link.node, question: a)
        }
        if let id = link.awaitID, let (_, done) = awaits.done.first(where: { $0.await.id == id }) {
            let when = done.doneAt.map { " at \($0.iso8601)" } ?? ""
            throw CommandError("this question was already \(done.outcome?.rawValue ?? "closed")\(when)\(done.doneBy.map { " by \($0)" } ?? "")",
                               hint: "`\(Shell.command(["flowdir", "show", instance]))` shows where the workflow is now")
        }
        throw CommandError("instance \(Path.basename(instance)) has no open question \(link.awaitID.map { "\($0) " } ?? "")for '\(link.node)'",
                           hint: "`flowdir inbox` lists the open ones")
    }

    /// The question, or a clear error when nothing is asked of that node.
    func requireQuestion() throws -> AwaitRecord {
        guard let question else {
            throw CommandError("'\(node)' of \(instance) is not waiting for a person",
                               hint: "`flowdir inbox` lists the open questions; `\(Shell.command(["flowdir", "run", instance]))` asks the next ones")
        }
        return question
    }
}

/// Hands a person's request to whichever flowdir holds the instance, or
/// carries it out here when none does; waits for the result.
enum PersonRequests {
    /// The git identity of the instance, else user@host.
    static func person(_ instance: String) -> String {
        GitSignature.person(in: try? GitRepository.open(instance), time: 0).identity
    }

    static func send(_ request: PersonRequest, to instance: String, ctx: Context, wait: Double = 15) async throws -> RequestResult {
        try RequestBox.post(request, to: instance)
        let engine = Engine(clock: ctx.clock, options: ctx.engineOptions(notifier: ctx.notifier))
        // A retry or rerun is the watcher's to carry out (`Verb.startsAJob`): settling here would not.
        let settles = !request.verb.startsAJob
        if settles, try await engine.settle(instance, reader: ctx.reader), let result = RequestBox.takeResult(request.id, in: instance) {
            return result
        }
        // Another flowdir holds it (a run or the watcher): it carries the request out.
        let deadline = ctx.clock.instant + .milliseconds(Int(wait * 1000))
        while ctx.clock.instant < deadline {
            if let result = RequestBox.takeResult(request.id, in: instance) { return result }
            try await ctx.clock.sleep(for: .milliseconds(50))
            if settles, try await engine.settle(instance, reader: ctx.reader), let result = RequestBox.takeResult(request.id, in: instance) {
                return result
            }
        }
        RequestBox.withdraw(request.id, in: instance)
        throw CommandError("the flowdir that holds \(instance) did not take the request within \(Int(wait))s",
                           hint: settles ? "`flowdir status` shows which flowdir holds it; try again"
                               : "a watcher carries it out: is `flowdir watch` (or `flowdir serve` without --no-watch) running on its folder?",
                           exitCode: 75)
    }

    /// `skip`, `claim`, `snooze`: the open question `target` names gets
    /// `verb` (with `duration`, read once the question is found), and the
    /// result is printed.
    static func ask(_ verb: PersonRequest.Verb, about target: String, root: String?,
                    duration: () throws -> Double? = { nil }) async throws {
        let ctx = try Context.load()
        let t = try AwaitTarget.resolve(target, ctx: ctx, root: root)
        _ = try t.requireQuestion()
        let request = PersonRequest(verb: verb, node: t.node, by: person(t.instance), duration: try duration())
        try report(try await send(request, to: t.instance, ctx: ctx))
    }

    /// Prints the result; a refusal is an error (exit 1).
    static func report(_ result: RequestResult) throws {
        guard result.ok else { throw CommandError(result.message) }
        Output.line(result.message)
    }
}
