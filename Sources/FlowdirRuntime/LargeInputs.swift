#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// Inputs whose content is kept beside git (docs/storage.md): put in place
/// from the content store before a node starts.
enum LargeInputs {
    /// The content, kept beside git, that a node about to start needs and
    /// this machine lacks: its inputs' working files left as pointers
    /// (or a retry's frozen inputs) whose objects are not in the store.
    /// Most nodes have no input kept beside git: one look at each, no file read.
    static func absent(_ rt: InstanceRuntime, node: ResolvedNode, pending: PendingRun?) -> [LFSPointer] {
        var missing: [LFSPointer] = []
        lazy var store = rt.store.contentStore  // made only for an input kept beside git
        if let frozen = pending?.frozen {
            for input in frozen.inputs {
                guard let sha = input.sha256, LFSPointer.isOID(sha), access(store.path(of: sha), F_OK) != 0,
                      let size = producedSize(rt, input), let p = LFSPointer(oid: sha, size: Int64(size)) else { continue }
                missing.append(p)
            }
            return missing
        }
        for port in node.inputs {
            guard let edge = rt.graph.incoming[node.id]?[port.name],
                  let out = rt.facts[edge.from.node]?.outputs[edge.from.port], let sha = out.sha256,
                  !rt.movedIn.contains(out.file),
                  let pointer = AbsentContent.pointer(atFile: Path.join(rt.path, out.file)), pointer.oid == sha,
                  // Its content here at another size: the pointer was edited (`ensurePresent` names it).
                  access(store.path(of: sha), F_OK) != 0 else { continue }
            missing.append(pointer)
        }
        return missing
    }

    /// The size a retry's frozen input had, from the run that made it.
    static func producedSize(_ rt: InstanceRuntime, _ input: InputUse) -> Int? {
        let file = InstancePaths.run(input.node, input.run) + "/run.yaml"
        guard let bytes = rt.store.read(file), case .success(let record) = RunRecordCodec.decode(bytes, file: file) else { return nil }
        return record.outputs.first { $0.port == input.sourcePort && $0.sha256 == input.sha256 }?.size
    }

    /// Makes the working file of an output kept beside git hold its
    /// content: a pointer left there (content absent when it was checked
    /// out) is replaced by the content from the store, checked as it is
    /// copied; if the store lacks it, an error says so.
    static func ensurePresent(_ rt: InstanceRuntime, file: String, sha256: String, port: String, node: String) throws {
        let full = Path.join(rt.path, file)
        var st = stat()
        // Missing or not a file: the caller names that.
        guard lstat(full, &st) == 0, st.st_mode & S_IFMT == S_IFREG, Int(st.st_size) <= LFSPointer.maximumLength,
              let bytes = try? LocalFileSystem().readFile(inside: rt.path, file, limit: LFSPointer.maximumLength),
              LFSPointer.looksLikePointer(bytes) else { return }
        let what = "input '\(port)' (\(file))"
        // Pointer text is never content: one naming other content (edited by
        // hand, committed with git) is refused, not handed to the tool.
        guard case .success(let pointer) = LFSPointer.parse(bytes), pointer.oid == sha256 else {
            throw EngineError.pointerNotTheOutput(what: what, sha256: sha256, node: node)
        }
        let store = rt.store.contentStore
        guard store.has(pointer) else {
            // The content is here at another size: the pointer's size was changed.
            if lstat(store.path(of: sha256), &st) == 0 { throw EngineError.pointerNotTheOutput(what: what, sha256: sha256, node: node) }
            throw EngineError.contentNotHere(what: what, sha256: pointer.oid, size: pointer.size)
        }
        _ = try rt.store.placeContent(paths: [file])
    }

    /// A retry's frozen input kept beside git, copied from the store.
    static func copy(_ rt: InstanceRuntime, sha256: String, to path: String, node: String, input: InputUse) throws {
        let store = rt.store.contentStore
        var st = stat()
        guard LFSPointer.isOID(sha256), lstat(store.path(of: sha256), &st) == 0,
              let pointer = LFSPointer(oid: sha256, size: Int64(st.st_size)) else {
            throw EngineError.contentNotHere(what: "input '\(input.port)' of run \(input.run) of '\(input.node)'", sha256: sha256, size: nil)
        }
        try Files.makeDirectories(Path.directory(of: path))
        try copy(rt, pointer, to: path, what: "input '\(input.port)'")
    }

    static func copy(_ rt: InstanceRuntime, _ pointer: LFSPointer, to path: String, what: String) throws {
        let store = rt.store.contentStore
        guard store.has(pointer) else { throw EngineError.contentNotHere(what: what, sha256: pointer.oid, size: pointer.size) }
        do {
            try store.copy(pointer, to: path)
        } catch {
            throw EngineError.unexpected("\(what): \(error)")
        }
    }
}
