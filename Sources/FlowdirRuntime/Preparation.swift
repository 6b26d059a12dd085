#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// Everything needed to start one run.
struct Prepared {
    enum Action {
        /// For an executor (`Engine.executors`).
        case job(JobSpec)
        /// The built-in ImageLoader: copy a file in.
        case copy(source: String, destination: String)
    }

    var record: RunRecord
    var workDir: String
    var action: Action
    /// Where its outputs go when their names are as declared (relative).
    var outputFiles: [String] = []

    var spec: JobSpec? {
        if case .job(let spec) = action { return spec }
        return nil
    }
}

enum Preparation {
    /// - Parameter run: the run to prepare again (a remote run reattached
    ///   after a restart, its inputs frozen in `pending`); else the next.
    /// - Parameter folder: the instance folder the run was started in when
    ///   another machine (or this instance before a move) started it: a
    ///   job that writes where it runs is followed there.
    static func prepare(_ rt: InstanceRuntime, node: ResolvedNode, pending: PendingRun?, run again: Int? = nil,
                        startedIn folder: String? = nil, now: Timestamp) throws -> Prepared {
        let id = node.id
        guard let tool = node.tool else { throw EngineError.unexpected("tool not installed: \(node.spec.kind)") }
        let run = again ?? rt.nextRunNumber(id)
        let base = folder ?? rt.path
        let workDir = workDirectory(base, id, run)
        // New (a folder left from before is emptied); work/ is made by the first.
        if mkdir(workDir, 0o755) != 0 {
            // Prepared again to follow a remote run: what its job wrote there stays.
            if errno == EEXIST, again == nil { try? Files.removeTree(workDir) }
            try Files.makeDirectories(workDir)
        }
        let facts = rt.facts[id]!

        // Inputs: the producers' current outputs, or a retry's frozen blobs.
        var inputPaths: [String: String] = [:]
        var used: [InputUse] = []
        if let frozen = pending?.frozen {
            for input in frozen.inputs {
                let ext = Path.fileExtension(rt.facts[input.node]?.outputs[input.sourcePort]?.file ?? "")
                let path = workDir + "/inputs/\(input.port)" + (ext.isEmpty ? "" : ".\(ext)")
                if let sha = input.sha256 {
                    // Kept beside git: from the content store.
                    try LargeInputs.copy(rt, sha256: sha, to: path, node: id, input: input)
                } else {
                    guard let oid = ObjectID(hex: input.blob), rt.store.repository.contains(oid) else {
                        throw EngineError.frozenInputGone(node: id, port: input.port, blob: input.blob)
                    }
                    try Files.writeAtomically(path, try rt.store.repository.readBlob(oid))
                }
                inputPaths[input.port] = path
                used.append(input)
            }
        } else {
            for b in Gating.bindings(node, graph: rt.graph, facts: rt.facts) {
                let path = rt.path + "/" + b.output.file
                if !rt.movedIn.contains(b.output.file) {
                    var st = stat()
                    guard lstat(path, &st) == 0 else {
                        throw EngineError.unexpected("input '\(b.port)' (\(b.output.file)) is missing from the folder")
                    }
                    // A link (committed by someone else, say) would hand the tool whatever it points to.
                    guard st.st_mode & S_IFMT != S_IFLNK else { throw EngineError.unexpected("input '\(b.port)': \(FileSystemError.symbolicLink(path))") }
                }
                inputPaths[b.port] = path
                if let sha = b.output.sha256, !rt.movedIn.contains(b.output.file) {
                    try LargeInputs.ensurePresent(rt, file: b.output.file, sha256: sha, port: b.port, node: b.node)
                }
                used.append(InputUse(port: b.port, node: b.node, sourcePort: b.sourcePort, run: b.output.run, blob: b.output.blob,
                                     sha256: b.output.sha256))
            }
        }
        let params = pending?.frozen?.params ?? facts.params
        var paramText: [String: String] = [:]
        for schema in tool.params { if let d = schema.defaultValue { paramText[schema.name] = d.plainText } }
        for p in params { paramText[p.key] = p.value.plainText }

        var outputPaths: [String: String] = [:]
        var outputFiles: [String] = []
        var jobOutputs: [JobOutput] = []
        for port in node.outputs {
            let name = "\(port.name)." + (port.ext ?? ContentFormat.defaultExtension(for: port.type))
            outputPaths[port.name] = workDir + "/" + name
            outputFiles.append(InstancePaths.outputs(id) + "/" + name)
            jobOutputs.append(JobOutput(port: port.name, file: name, type: port.type, optional: port.optional))
        }
        func spec(_ work: JobWork) -> JobSpec {
            JobSpec(instance: rt.path, node: id, run: run, submissionKey: "\(rt.open.snapshot.record.id)/\(id)/\(run)", workDir: workDir,
                    logPath: logPath, work: work, outputs: jobOutputs, startedAt: now)
        }
        var record = RunRecord(run: run, node: id, kind: node.spec.kind, trigger: pending?.trigger ?? .auto,
                               params: params.map { ParamEntry(key: $0.key, value: $0.value) }, inputs: used,
                               startedAt: now, host: Host.name, user: Host.user)
        record.answer = pending?.answer
        let logPath = base + "/" + InstancePaths.run(id, run) + "/log.txt"
        switch tool.run {
        case .command(let template):
            let argv = template.expand(inputs: inputPaths, outputs: outputPaths, params: paramText, runDir: workDir,
                                       toolDir: tool.file.map(Path.directory(of:)) ?? rt.path)
            record.command = argv
            let env = ["FLOWDIR_INSTANCE": rt.path, "FLOWDIR_NODE": id, "FLOWDIR_RUN": String(run), "FLOWDIR_RUN_DIR": workDir]
            // A first run makes `runs/` too: made before its own folder, not after a failed try.
            let work = CommandWork(argv: argv, environment: env, newLogFolders: run == 1 ? 2 : 1)
            return Prepared(record: record, workDir: workDir, action: .job(spec(.command(work))), outputFiles: outputFiles)
        case .builtin where node.spec.kind == "ImageLoader":
            guard let given = params[key: "path"]?.value.stringValue, !given.isEmpty else {
                throw EngineError.unexpected("ImageLoader needs `path` (or a person to pick an image)")
            }
            let source = resolve(given, rt)
            record.command = ["builtin:ImageLoader", source]
            try Files.makeDirectories(Path.directory(of: logPath))
            try Files.writeAtomically(logPath, "ImageLoader: copying \(source)\n")
            return Prepared(record: record, workDir: workDir, action: .copy(source: source, destination: workDir + "/image"))
        case .builtin:
            throw EngineError.unexpected("\(node.spec.kind) is answered by a person, not run")
        case .backend(let key, let entries):
            guard let backend = Backends.named(key) else {
                throw EngineError.unexpected("tool \(tool.kind): this flowdir has no backend for run.\(key)")
            }
            let made = try backend.job(for: BackendRun(
                tool: tool, entries: entries, instance: base, node: id, run: run, workDir: workDir,
                toolDir: tool.file.map(Path.directory(of:)) ?? rt.path, inputs: inputPaths, outputs: outputPaths,
                params: paramText, typedParams: params))
            record.command = made.command
            // Followed there by a machine that takes the instance over (see `Engine.reattach`).
            if backend.traits.runsInSharedFolder { record.folder = base }
            try Files.makeDirectories(Path.directory(of: logPath))
            return Prepared(record: record, workDir: workDir, action: .job(spec(.backend(key: key, payload: made.payload))),
                            outputFiles: outputFiles)
        }
    }

    /// Where run `run` of `node` works: its outputs are written there, and
    /// its processes (started there, `FLOWDIR_RUN_DIR` naming it) are found
    /// by it should flowdir be killed while they run.
    static func workDirectory(_ rt: InstanceRuntime, _ node: String, _ run: Int) -> String {
        workDirectory(rt.path, node, run)
    }

    static func workDirectory(_ instance: String, _ node: String, _ run: Int) -> String {
        // One level (node ids hold no dot): one folder made per run, not two.
        instance + "/" + InstancePaths.local + "/work/\(node).\(run)"
    }

    /// A loader's path: absolute, or relative to the instance, then to its template.
    static func resolve(_ path: String, _ rt: InstanceRuntime) -> String {
        if path.hasPrefix("/") { return path }
        let inInstance = Path.join(rt.path, path)
        if Files.exists(inInstance) { return inInstance }
        let template = rt.open.snapshot.record.template
        if !template.isEmpty {
            let beside = Path.join(Path.directory(of: template), path)
            if Files.exists(beside) { return beside }
        }
        return inInstance
    }
}

/// Checking and moving a finished run's outputs into `out/`.
enum Outputs {
    /// What a finished run's outputs came to: their records, the changes to
    /// commit, and whether the work folder itself became `out/` (then it is
    /// gone, and not to be removed).
    struct Collected {
        var records: [OutputRecord] = []
        var changes: [InstanceStore.Change] = []
        var workDirectoryMoved = false
    }

    /// - Parameter bigFile: outputs at least this large go to the content
    ///   store, streamed (never read whole), and are committed as pointers.
    static func collect(_ rt: InstanceRuntime, node: ResolvedNode, workDir: String, run: Int, bigFile: Int = .max)
        -> Result<Collected, NodeError>
    {
        var result = Collected()
        // Read and checked first, all of them: nothing is moved for a run one of whose outputs is bad.
        // `bytes`: what is committed (a large output's pointer); `blob`: the content's blob id.
        var found: [(name: String, file: String, full: String, bytes: [UInt8], blob: ObjectID, stored: LFSPointer?)] = []
        // Listed when a tool wrote an output under another name than the declared one, or to move the folder whole.
        var listing: [String]?
        // Read once: the bytes are committed anyway, so the check reads them from memory.
        let readOutput = { (name: String) in
            // Never through a link: a tool's output is what it wrote, not what a link it made points to.
            // One name in flowdir's own work folder: O_NOFOLLOW says so in one open.
            Result { () throws(FileSystemError) -> [UInt8]? in
                name.utf8.contains(UInt8(ascii: "/")) ? try LocalFileSystem().readFile(inside: workDir, name, limit: 1 << 34)
                    : try LocalFileSystem().readFile(workDir + "/" + name, limit: 1 << 34, followingLinks: false)
            }
        }
        for port in node.outputs {
            let declared = "\(port.name)." + (port.ext ?? ContentFormat.defaultExtension(for: port.type))
            var name: String? = declared
            // Looked for, not read: a large output is never read whole (see below).
            var probe = stat()
            if lstat(workDir + "/" + declared, &probe) != 0 {
                if listing == nil { listing = (try? LocalFileSystem().listDirectory(workDir)) ?? [] }
                name = listing!.first { $0 == port.name || $0.hasPrefix(port.name + ".") }
            }
            guard let name else {
                if port.optional { continue }
                return .failure(NodeError(summary: "the tool did not write its output '\(port.name)'", code: "missingOutput",
                                          hint: "tool \(node.spec.kind) must write a \(port.type) to {outputs.\(port.name)} (\(declared))"))
            }
            let path = workDir + "/" + name
            let format: ContentFormat
            // What is committed (a large output's pointer), the content's blob id, and a large one's pointer.
            let bytes: [UInt8], blob: ObjectID, stored: LFSPointer?
            // The look above, when it found the declared name: one lstat an output.
            var st = probe
            do {
                if name == declared || lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, Int(st.st_size) >= bigFile {
                    // Large: checked by its header (and end), then hashed as it is copied into the store.
                    format = try ContentCheck.check(try FileByteSource(path: path), as: port.type, allowEmpty: true)
                    let kept = try rt.store.contentStore.store(file: path)
                    (bytes, blob, stored) = (kept.pointer.bytes, kept.blob, kept.pointer)
                } else {
                    // A folder or a FIFO is no output (and a FIFO would hang a plain read); nor is a link.
                    if st.st_mode & S_IFMT == S_IFLNK { throw FileSystemError.symbolicLink(path) }
                    guard st.st_mode & S_IFMT == S_IFREG, let regular = try readOutput(name).get() else {
                        throw FileSystemError.other(path, message: "not a regular file")
                    }
                    format = try ContentCheck.check(regular, as: port.type, allowEmpty: true)
                    (bytes, blob, stored) = (regular, GitRepository.blobID(of: regular), nil)
                }
            } catch let failure as ContentCheck.Failure {
                return .failure(NodeError(summary: "output '\(port.name)' is not a valid \(port.type): \(failure.reason)",
                                          code: "badOutput", hint: "check that tool \(node.spec.kind) writes a \(port.type) to {outputs.\(port.name)}"))
            } catch let failure as ContentStore.Failure {
                return .failure(NodeError(summary: "output '\(port.name)' cannot be kept: \(failure)", code: failure.isNoSpace ? "noSpace" : "badOutput",
                                          hint: failure.isNoSpace ? "free space (`flowdir storage free`), then `flowdir retry \(node.id)`" : nil))
            } catch {
                return .failure(NodeError(summary: "output '\(port.name)' cannot be read: \(error)", code: "badOutput"))
            }
            let ext = port.ext ?? (format == .binary ? ContentFormat.defaultExtension(for: port.type) : format.fileExtension)
            let file = "\(port.name).\(ext)"
            let full = InstancePaths.outputs(node.id) + "/" + file
            // A different file name for the port than last time: the old one goes.
            if let old = rt.facts[node.id]?.outputs[port.name]?.file, old != full { result.changes.append(.delete(old)) }
            found.append((name, file, full, bytes, blob, stored))
            result.records.append(OutputRecord(port: port.name, blob: blob.hex, size: stored.map { Int($0.size) } ?? bytes.count, type: port.type,
                                               file: "out/" + file, sha256: stored?.oid))
        }
        guard !found.isEmpty else { return .success(result) }
        // Moved in now (renames, atomic), so the next node can use them at
        // once; committed with the rest of this event.
        let outDir = Path.join(rt.path, InstancePaths.outputs(node.id))
        let firstOutputs = rt.facts[node.id]?.outputs.isEmpty ?? true
        // A remote job's outputs are made once: were flowdir killed before
        // this commit, the job is followed again and must find them where it
        // left them. So they are written in from the bytes read above, and
        // the work folder goes after the commit, as ever.
        let keepInWorkFolder = node.tool?.run.isRemote ?? false
        do {
            try rt.store.intend(found.map(\.full))
            if keepInWorkFolder {
                for output in found {
                    if let stored = output.stored {
                        try Files.makeDirectories(outDir)
                        try rt.store.contentStore.copy(stored, to: outDir + "/" + output.file)
                    } else {
                        _ = try Files.writeAtomically(outDir + "/" + output.file, output.bytes)
                    }
                }
            } else if firstOutputs, found.allSatisfy({ $0.name == $0.file }),
               (listing ?? (try? LocalFileSystem().listDirectory(workDir))) == found.map(\.name).sorted(),
               rename(workDir, outDir) == 0 {
                // A first run's folder holds its outputs and nothing else: it
                // becomes `out/` (one rename where a folder made, a file moved
                // and a folder removed cost the disk's file system four times
                // as much). Otherwise, or should `out/` hold anything, file by file.
                result.workDirectoryMoved = true
            } else {
                // out/ is made by the first run (made first then: one failed rename fewer).
                if firstOutputs { _ = mkdir(outDir, 0o755) }
                for output in found where rename(workDir + "/" + output.name, outDir + "/" + output.file) != 0 {
                    try Files.makeDirectories(outDir)
                    try Files.rename(workDir + "/" + output.name, outDir + "/" + output.file)
                }
            }
        } catch {
            return .failure(NodeError(summary: "outputs cannot be moved into place: \(error)", code: "badOutput"))
        }
        for output in found {
            // Its stat as moved in, for git's index: not what a later edit leaves.
            // A large one: its pointer is committed (hashed then), the content is what is in place.
            result.changes.append(.placed(output.full, output.bytes, blob: output.stored == nil ? output.blob : nil,
                                          stamp: FileStamp.of(Path.join(rt.path, output.full))))
        }
        return .success(result)
    }

    /// The last line a tool printed, to say in a failure's summary: from
    /// `log`, the log as the runner kept it, when it did; else from the file.
    static func lastLogLine(_ rt: InstanceRuntime, _ runDir: String, log: [UInt8]?) -> String? {
        if let log { return LogLines.last(1, of: log).first }
        return LogLines.last(1, inside: rt.path, runDir + "/log.txt")?.first
    }
}
