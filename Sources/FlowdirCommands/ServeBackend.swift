#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirPages
import FlowdirTemplates
import Dispatch
import FoundationEssentials
import Logging

/// The pages' views and actions, by the commands' own code: the list is
/// `ls`'s rows, the cards `show`'s, the Action Center `inbox`'s; every
/// action is the request or the function its command uses.
final class ServeBackend: UIBackend, @unchecked Sendable {
    let ctx: Context
    let rootFolders: [String]
    /// id → folder, as last found.
    let folders = Locked([String: String]())

    /// Whether this process runs the watcher on the roots too.
    let watched: Bool
    /// This server's address once it listens (Settings shows it).
    let server = Locked<ServerInfo?>(nil)
    let logger = Logger(label: "flowdir.serve")

    init(ctx: Context, roots: [String], watched: Bool) {
        self.ctx = ctx
        rootFolders = roots
        self.watched = watched
        rowFile = ServeRowCache(stateHome: ctx.stateHome)
        let kept = rowFile.load()
        rows = Locked(kept)
        folders.locked { for (folder, r) in kept where !r.row.id.isEmpty { $0[r.row.id] = folder } }
    }

    func instanceFolders() -> [String] {
        rootFolders.flatMap { InstanceListing.paths(ctx, root: $0) }
    }

    func roots() -> [String] { rootFolders }

    func id(ofFolder folder: String) -> String? {
        guard let record = (try? ctx.reader.read(instanceRecordOnly: folder)) ?? nil else { return nil }
        folders.locked { $0[record.id] = folder }
        return record.id
    }

    func folder(of id: String) throws(UIError) -> String {
        if let known = folders.locked({ $0[id] }), (try? ctx.reader.read(instanceRecordOnly: known))??.id == id { return known }
        for folder in instanceFolders() where self.id(ofFolder: folder) == id { return folder }
        throw UIError(404, "no instance with id '\(id)' under \(rootFolders.joined(separator: ", "))", hint: "it may have been deleted or moved")
    }

    // MARK: Views

    func list(_ query: UIListQuery) async throws(UIError) -> [UInt8] {
        let filter = LsCommand.Filter(rawValue: query.filter.rawValue) ?? .all
        var rows: [(row: LsCommand.Row, updated: Timestamp)] = []
        let all = instanceFolders()
        for folder in all {
            let (row, updated) = cachedRow(folder)
            if LsCommand.shown(row, filter: filter, search: query.search, archived: query.archived) { rows.append((row, updated)) }
        }
        let sorted = LsCommand.sorted(rows, by: LsCommand.Sort(rawValue: query.sort.rawValue) ?? .recent) { $0 }
        saveRowsIfChanged(keeping: Set(all))
        return try Self.encode(["rows": sorted.map(\.row)])
    }

    /// The rows kept on disk for the next start (`ServeRowCache`): after a
    /// list that read an instance again, at most every 2 s, off the request's way.
    func saveRowsIfChanged(keeping folders: Set<String>) {
        let now = ctx.clock.now().seconds
        let due = rowsSave.locked { state -> Bool in
            guard state.changed, !state.saving, now - state.last >= 2 else { return false }
            state = (false, true, now)
            return true
        }
        guard due else { return }
        // Only instances still there: a deleted one's row goes with the next write.
        let snapshot = rows.locked { $0 }.filter { folders.contains($0.key) }
        let (file, state, logger) = (rowFile, rowsSave, logger)
        saver.async {
            do { try file.save(snapshot) } catch { logger.notice("could not keep the list's rows for the next start: \(error)") }
            state.locked { $0.saving = false }
        }
    }

    /// A row as last read while the instance's git index, its inbox and its
    /// instance.yaml are as they were (flowdir commits every change and
    /// keeps the index in step; git does too): a list of a thousand reads
    /// only what changed.
    let rows: Locked<ServeRowCache.Rows>
    let rowFile: ServeRowCache
    /// Whether a row was read again since the file was written, whether it is being written, when it last was.
    let rowsSave = Locked((changed: false, saving: false, last: -Double.infinity))
    let saver = DispatchQueue(label: "flowdir.serve.rows")

    func cachedRow(_ folder: String) -> (LsCommand.Row, Timestamp) {
        let stamp = [".git/index", InstancePaths.inbox, InstancePaths.instanceFile].map { FileStamp.of(folder + "/" + $0) }
        if let kept = rows.locked({ $0[folder] }), kept.stamp == stamp, !stamp.contains(nil) { return (kept.row, kept.updated) }
        var (row, updated, snapshot) = LsCommand.row(ctx, folder)
        if let snapshot {
            folders.locked { $0[row.id] = snapshot.path }
            row.thumb = Self.latestImage(snapshot).map { Self.url(row.id, "thumbs", $0) }
        }
        rows.locked { $0[folder] = (stamp, row, updated) }
        rowsSave.locked { $0.changed = true }
        return (row, updated)
    }

    func detail(_ id: String) async throws(UIError) -> [UInt8] {
        let path = try folder(of: id)
        var reader = ctx.reader
        reader.readsLastRuns = true
        let s: InstanceSnapshot
        do { s = try reader.read(path) } catch { throw ServeErrors.ui(error, status: 500, logger: logger) }
        let awaits = (try? ctx.reader.awaits(path, includeDone: false))?.open ?? []
        let now = ctx.clock.now()
        let cards = ShowCommand.cards(s).map { card in
            ServeViews.card(card, snapshot: s, id: id, question: awaits.first { $0.await.node == card.id }?.await, now: now)
        }
        return try Self.encode(ShowCommand.Report(s, path: path, nodes: cards))
    }

    func history(_ id: String, node: String) async throws(UIError) -> [UInt8] {
        let path = try folder(of: id)
        return try Self.encode(["runs": ServeViews.history(path, id: id, node: node, limit: 50)])
    }

    func inbox() async throws(UIError) -> [UInt8] {
        let (items, _) = InboxCommand.items(ctx, paths: instanceFolders(), now: ctx.clock.now())
        return try Self.encode(["items": items.map { ServeViews.InboxRow(item: $0.0, preview: ServeViews.preview($0.1, id: $0.0.instanceId, folder: $0.0.instance)) }])
    }

    func templates() async throws(UIError) -> [UInt8] {
        try Self.encode(["templates": listedTemplates()])
    }

    /// The templates New from Template offers, as `flowdir templates` finds
    /// them (./workflows, the user's template folder) and in each root's
    /// `workflows/`: the only ones `/api/new` makes instances of.
    func listedTemplates() -> [ServeViews.Template] {
        var out: [ServeViews.Template] = []
        let fs = LocalFileSystem()
        for dir in ["workflows", ctx.paths.templateDirectory] + rootFolders.map({ $0 + "/workflows" }) where fs.isDirectory(dir) {
            for name in ((try? fs.listDirectory(dir)) ?? []).sorted() where TemplatesCommand.isTemplateName(name) {
                let file = Path.join(dir, name)
                guard fs.isRegularFile(file), let real = Files.realPath(file), !out.contains(where: { $0.path == real }) else { continue }
                let loaded = ctx.loader.load(path: real)
                out.append(ServeViews.Template(id: ServeViews.Template.id(of: real), path: real,
                                               name: loaded.template?.name ?? Path.removingExtension(name), valid: loaded.isValid))
            }
        }
        return out
    }

    // MARK: Actions

    func perform(_ action: UIAction, instance id: String, node: String?) async throws(UIError) -> UIDone {
        let path = try folder(of: id)
        do {
            return try await carryOut(action, path: path, node: node ?? "")
        } catch let e as UIError {
            throw e
        } catch {
            throw ServeErrors.ui(error, status: 409, logger: logger)
        }
    }

    func carryOut(_ action: UIAction, path: String, node: String) async throws -> UIDone {
        let by = PersonRequests.person(path)
        func send(_ r: PersonRequest) async throws -> UIDone {
            let result = try await PersonRequests.send(r, to: path, ctx: ctx)
            guard result.ok else { throw UIError(409, result.message) }
            return UIDone(result.message)
        }
        switch action {
        case .answerFiles(let uploads):
            let snapshot = try ctx.reader.read(path)
            guard let graphNode = snapshot.graph?.node(node) else { throw UIError(404, "\(path) has no node '\(node)'") }
            let open = (try? ctx.reader.awaits(path, includeDone: false))?.open.first { $0.await.node == node }?.await
            let expects = open?.expects ?? AwaitPolicy.expectedFiles(graphNode)
            guard !expects.isEmpty else { throw UIError(422, "'\(node)' does not ask for files") }
            var request = PersonRequest(verb: .answer, node: node, by: by)
            for upload in uploads {
                guard let expected = expects.first(where: { $0.port == upload.port }) else {
                    throw UIError(422, "'\(node)' asks for \(expects.map(\.port).joined(separator: ", ")), not '\(upload.port)'")
                }
                guard upload.bytes.count <= ctx.config.answerSizeLimit else {
                    throw UIError(413, "\(upload.name) is larger than answerSizeLimit (\(ctx.config.answerSizeLimit >> 20) MB)")
                }
                // Named as `flowdir answer` names a dropped file: its own extension kept (a plain one).
                var ext = Path.fileExtension(upload.name)
                if ext.count > 8 || !ext.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) }) { ext = "" }
                let name = "\(node).\(upload.port)." + (ext.isEmpty ? Path.fileExtension(expected.file) : ext.lowercased())
                try Files.writeAtomically(Path.join(Path.join(path, InstancePaths.inbox), name), upload.bytes)
                request.files.append(name)
            }
            return try await send(request)
        case .answerChoice(let choice):
            var r = PersonRequest(verb: .answer, node: node, by: by)
            r.choice = .string(choice)
            return try await send(r)
        case .approve(let params):
            var r = PersonRequest(verb: .answer, node: node, by: by)
            r.approve = true
            r.params = params
            return try await send(r)
        case .decline:
            var r = PersonRequest(verb: .answer, node: node, by: by)
            r.approve = false
            return try await send(r)
        case .claim: return try await send(PersonRequest(verb: .claim, node: node, by: by))
        case .release: return try await send(PersonRequest(verb: .release, node: node, by: by))
        case .snooze(let seconds): return try await send(PersonRequest(verb: .snooze, node: node, by: by, duration: seconds))
        case .skip: return try await send(PersonRequest(verb: .skip, node: node, by: by))
        case .cancel: return try await send(PersonRequest(verb: .cancel, node: node, by: by))
        case .retry(let run):
            var r = PersonRequest(verb: .retry, node: node, by: by)
            r.run = run
            return try await send(r)
        case .rerun: return try await send(PersonRequest(verb: .rerun, node: node, by: by))
        case .polling(let paused):
            return try await send(PersonRequest(verb: paused ? .pausePolling : .resumePolling, node: "", by: by))
        case .setParams(let given):
            return try await ServeParams.write(given, node: node, path: path, ctx: ctx)
        case .runReady:
            return try await ServeParams.runReady(path, watched: watched, roots: rootFolders, ctx: ctx)
        case .runNode:
            return try await ServeParams.runReady(path, node: node, watched: watched, roots: rootFolders, ctx: ctx)
        case .duplicate(let name):
            let (message, dir) = try DuplicateCommand.duplicate(ctx, path: path, directory: nil, title: name.flatMap { $0.isEmpty ? nil : $0 })
            return UIDone(message, id: id(ofFolder: Files.realPath(dir) ?? dir))
        case .archive(let archived):
            return UIDone(try ArchiveCommand.archive(ctx, path: path, undo: !archived))
        case .delete:
            return UIDone(try DeleteCommand.delete(ctx, path: path, ask: false))
        case .pin(let pinned):
            return try await pin(pinned, path: path, node: node.isEmpty ? nil : node)
        }
    }

    /// A new instance of a template this server lists (by its id or its
    /// name), never of any other file: a page names no path on disk.
    func create(template: String, name: String?) async throws(UIError) -> UIDone {
        let listed = listedTemplates()
        let matches = listed.contains { $0.id == template } ? listed.filter { $0.id == template }
            : listed.filter { $0.name == template || Path.removingExtension(Path.basename($0.path)) == template || Path.basename($0.path) == template }
        guard let chosen = matches.first else {
            throw UIError(404, "no template '\(template.prefix(200))' among those this server offers",
                          hint: "GET /api/templates lists them; put a template in a root's workflows/ folder to offer it")
        }
        guard matches.count == 1 else {
            throw UIError(409, "several templates are called '\(template.prefix(200))'",
                          hint: "give one's id: " + matches.map { "\($0.id) (\($0.path))" }.joined(separator: ", "))
        }
        guard chosen.valid else {
            throw UIError(422, "the template '\(chosen.name)' is invalid; nothing was created", hint: "`flowdir check \(chosen.path)` says why")
        }
        do {
            let title = name.flatMap { $0.isEmpty ? nil : $0 } ?? chosen.name
            let dir = NewCommand.freeName(Path.join(rootFolders.first ?? ".", Slug.make(title)))
            let (message, made) = try NewCommand.create(ctx, template: chosen.path, directory: dir, title: title, overrides: [])
            return UIDone(message, id: id(ofFolder: Files.realPath(made) ?? made))
        } catch {
            throw ServeErrors.ui(error, status: 422, logger: logger)
        }
    }

    // MARK: Helpers

    /// The latest image output, by graph order from the end: a succeeded
    /// node's file under `out/` for an image or mask port.
    static func latestImage(_ s: InstanceSnapshot) -> String? {
        guard let graph = s.graph else { return nil }
        for id in graph.order.reversed() where s.states[id]?.state == .succeeded {
            guard let node = graph.node(id) else { continue }
            for port in node.outputs where port.type == .image || port.type == .mask {
                let out = InstancePaths.outputs(id)
                let names = (try? LocalFileSystem().listDirectory(Path.join(s.path, out))) ?? []
                // Not one whose content is not here (its file is a pointer): no thumbnail of that.
                if let name = names.sorted().first(where: { $0.hasPrefix(port.name + ".") }),
                   AbsentContent.pointer(atFile: Path.join(s.path, out + "/" + name)) == nil { return out + "/" + name }
            }
        }
        return nil
    }

    static func url(_ id: String, _ kind: String, _ relative: String) -> String {
        "/api/instances/\(UIServer.percentEncoded(id))/\(kind)/" + relative.split(separator: "/").map { UIServer.percentEncoded(String($0)) }.joined(separator: "/")
    }

    static func encode<T: Encodable>(_ value: T) throws(UIError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do { return Array(try encoder.encode(value)) } catch {
            throw ServeErrors.ui(error, status: 500, logger: Logger(label: "flowdir.serve"))
        }
    }
}
