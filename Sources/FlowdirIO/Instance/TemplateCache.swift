#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirTemplates

/// An instance's workflow as last loaded and found valid, kept in
/// `.flowdir/cache/workflow` (local, never committed; docs/instance-folder.md) in
/// `GraphCodec`'s form. Parsing and validating a 1,000-node workflow cost
/// 30 ms of CPU on the way to a run's first job; reading it back costs a
/// few. It is used only when everything the load depended on is the same,
/// byte for byte: workflow.yaml, each tool file the search consulted, the
/// absence of those it did not find, the search path, and the flowdir
/// binary itself. Anything else, or a damaged file, is a miss: the workflow
/// is loaded as before, and the cache written again. Paths in the instance
/// are kept relative to it, so `run` (which names the instance by its full
/// path) and `show inst` read the same cache.
public enum TemplateCache {
    public static func file(_ instance: String) -> String { Path.join(instance, InstancePaths.local + "/cache/workflow") }

    /// What `loader` would load from `workflowFile` with `toolDirectories`.
    public static func load(instance: String, workflowFile: String, toolDirectories: [String],
                            loader: TemplateLoader) -> LoadedTemplate {
        let fs = loader.fileSystem
        guard let bytes = try? fs.readFile(workflowFile, limit: DocumentReader.maxSize) else {
            return loader.load(path: workflowFile, toolDirectories: toolDirectories)  // which says why
        }
        let key = Key(binary: binaryIdentity(), instance: instance, workflowFile: workflowFile,
                      searchPath: toolDirectories + loader.userToolDirectories, workflow: bytes)
        if key.binary != nil, let cached = try? fs.readFile(file(instance), limit: 1 << 30),
           let hit = read(cached, key: key, fileSystem: fs) {
            return hit
        }
        let loaded = loader.load(bytes: bytes, file: workflowFile, toolDirectories: toolDirectories)
        // Only into a .flowdir/ a writer made (and kept out of git); a clone
        // that was only read gets none. Best effort: a read-only instance is read without one.
        if key.binary != nil, loaded.isValid, let graph = loaded.graph, fs.isDirectory(Path.join(instance, InstancePaths.local)) {
            let path = file(instance)
            try? Files.makeDirectories(Path.directory(of: path))
            _ = try? Files.writeAtomically(path, write(graph, loaded, key: key))
        }
        return loaded
    }

    /// All that a load's outcome depends on but the tool files.
    struct Key {
        var binary: String?
        /// The folder as named this time: paths under it are kept relative to it.
        var instance: String
        var workflowFile: String
        var searchPath: [String]
        var workflow: [UInt8]
    }

    /// Names the format. The binary's identity already keys a cache, but
    /// a format change says so here too: 2, a tool's `run.<backend>` kept
    /// as its key and entry (`GraphCodec`), no tag per backend.
    static let magic = "flowdir workflow cache 2"

    static func write(_ graph: WorkflowGraph, _ loaded: LoadedTemplate, key: Key) -> [UInt8] {
        var w = BinaryWriter(base: key.instance)
        w.string(magic)
        w.string(key.binary ?? "")
        w.path(key.workflowFile)
        w.array(key.searchPath) { $0.path($1) }
        w.bytes(key.workflow)
        w.array(loaded.toolFiles) { w, f in
            w.path(f.path)
            w.optional(f.bytes) { $0.bytes($1) }
        }
        w.bytes(GraphCodec.encode(graph, diagnostics: loaded.diagnostics, base: key.instance))
        let body = w.finish()
        return body + SHA1.hash(body)
    }

    static func read(_ file: [UInt8], key: Key, fileSystem fs: any FileSystem) -> LoadedTemplate? {
        // Checked where it lies: the file is the size of the workflow and more.
        let body = file.dropLast(20)
        guard file.count > 20, SHA1.hash(body).elementsEqual(file.suffix(20)) else { return nil }
        do throws(BinaryReader.Malformed) {
            var r = try BinaryReader(body, base: key.instance)
            guard try r.string() == magic, try r.string() == key.binary, try r.path() == key.workflowFile,
                  try r.array({ r throws(BinaryReader.Malformed) in try r.path() }) == key.searchPath,
                  try r.bytes().elementsEqual(key.workflow) else { return nil }
            var sources = [key.workflowFile: DocumentReader.text(of: key.workflow)]
            let toolFiles = try r.array { r throws(BinaryReader.Malformed) in
                ToolFile(path: try r.path(), bytes: try r.optional { r throws(BinaryReader.Malformed) in Array(try r.bytes()) })
            }
            for f in toolFiles {
                // Still what it was; an error reading it is a change too.
                let now: [UInt8]?
                do { now = try fs.readFileIfRegular(f.path, limit: DocumentReader.maxSize) } catch { return nil }
                guard now == f.bytes else { return nil }
                if let bytes = f.bytes { sources[f.path] = DocumentReader.text(of: bytes) }
            }
            guard let (graph, diagnostics) = GraphCodec.decode(try r.bytes(), base: key.instance), r.isAtEnd else { return nil }
            var loaded = LoadedTemplate(file: key.workflowFile, template: graph.template, graph: graph,
                                        diagnostics: diagnostics, sources: sources)
            loaded.toolFiles = toolFiles
            return loaded
        } catch {
            return nil
        }
    }

    /// This flowdir binary, as the file system knows it: another build is
    /// another binary, whose model or rules may differ.
    static func binaryIdentity() -> String? {
        var st = stat()
        guard stat("/proc/self/exe", &st) == 0 else { return nil }
        return "\(st.st_dev):\(st.st_ino):\(st.st_size):\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
    }
}
