import FlowdirCore
import FlowdirIO
import FlowdirPages
import FlowdirTemplates

/// Any run's outputs, for the run history's views and Compare
/// (docs/serve.md): the current run's file in `out/`, an older run's
/// content from the content store or from git, never a file outside the
/// instance.
extension ServeBackend {
    func runOutput(_ id: String, node: String, run: Int, port: String) async throws(UIError) -> RunOutputSource {
        let path = try folder(of: id)
        let runYAML = Path.join(path, InstancePaths.run(node, run) + "/run.yaml")
        guard let bytes = try? LocalFileSystem().readFile(runYAML, limit: 1 << 20),
              case .success(let record) = RunRecordCodec.decode(bytes, file: runYAML), record.run == run else {
            throw UIError(404, "'\(node)' has no run \(run) here", hint: "its run history lists the runs there are")
        }
        guard let made = record.outputs.first(where: { $0.port == port }) else {
            throw UIError(404, "run \(run) of '\(node)' made no output '\(port)'",
                          hint: record.outputs.isEmpty ? "it made none" : "it made " + record.outputs.map(\.port).joined(separator: ", "))
        }
        let name = Path.basename(made.file)
        let repo: GitRepository
        do { repo = try GitRepository.open(path) } catch { throw UIError(500, "cannot open the instance's git repository: \(error)") }
        // Kept beside git (docs/storage.md): from the content store, read as it is sent.
        if let sha = made.sha256 {
            let object = ContentStore(gitDirectory: repo.gitDirectory).path(of: sha)
            if Files.exists(object) { return .file(path: object, name: name) }
            throw UIError(404, "output '\(port)' of run \(run) of '\(node)' is \(AbsentContent.words(size: Int64(made.size)))",
                          hint: "get it with `flowdir storage get`, or `flowdir sync` from the machine that made it")
        }
        // Still what HEAD has in out/: the file itself (a video seeks in it),
        // unless a link leads out of the instance or into .git/ or .flowdir/
        // (as the /files/ route refuses: docs/security.md).
        let relative = InstancePaths.node(node) + "/" + made.file
        if let head = try? repo.head(), let entry = try? repo.entry(at: relative, inTree: head.tree), entry.id.hex == made.blob,
           entry.mode != 0o120000, let real = Files.realPath(Path.join(path, relative)), let base = Files.realPath(path),
           real.hasPrefix(base + "/"), !InstancePaths.isPrivate(String(real.dropFirst(base.count + 1))) {
            return .file(path: real, name: name)
        }
        // An older run's: its blob, kept in git (under `bigFile`, so small).
        guard let oid = ObjectID(hex: made.blob), repo.contains(oid), let content = try? repo.readBlob(oid) else {
            throw UIError(404, "output '\(port)' of run \(run) of '\(node)' (blob \(made.blob.prefix(12))) is no longer in the repository")
        }
        return .bytes(content, name: name)
    }
}
