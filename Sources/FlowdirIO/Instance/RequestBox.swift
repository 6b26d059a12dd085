import FlowdirCore
import FlowdirTemplates

public enum RequestBox {
    static func directory(_ instance: String) -> String { Path.join(instance, InstancePaths.local + "/requests") }

    public static func post(_ r: PersonRequest, to instance: String) throws(FileSystemError) {
        try Files.writeAtomically(Path.join(directory(instance), r.id + ".request.yaml"), r.fileText)
    }

    /// Requests waiting, oldest first; unreadable ones are answered as such.
    public static func pending(_ instance: String) -> [PersonRequest] {
        let dir = directory(instance)
        let names = ((try? LocalFileSystem().listDirectory(dir)) ?? []).filter { $0.hasSuffix(".request.yaml") }.sorted()
        return names.compactMap { name in
            let id = String(name.dropLast(".request.yaml".count))
            let file = Path.join(dir, name)
            guard let bytes = try? LocalFileSystem().readFile(file, limit: 1 << 20),
                  let r = PersonRequest.decode(bytes, id: id, file: file, defaultBy: Host.user) else {
                finish(id, in: instance, RequestResult(ok: false, message: "the request file could not be read"))
                return nil
            }
            return r
        }
    }

    /// Records the result and removes the request.
    public static func finish(_ id: String, in instance: String, _ result: RequestResult) {
        let dir = directory(instance)
        _ = try? Files.writeAtomically(Path.join(dir, id + ".result"), (result.ok ? "ok\n" : "refused\n") + result.message + "\n")
        try? Files.remove(Path.join(dir, id + ".request.yaml"))
    }

    /// The result, once there is one (and then it is removed).
    public static func takeResult(_ id: String, in instance: String) -> RequestResult? {
        let file = Path.join(directory(instance), id + ".result")
        guard let bytes = try? LocalFileSystem().readFile(file, limit: 1 << 20) else { return nil }
        try? Files.remove(file)
        let text = String(decoding: bytes, as: UTF8.self)
        let first = text.prefix { $0 != "\n" }
        return RequestResult(ok: first == "ok", message: String(text.dropFirst(first.count + 1)).trimmed())
    }

    /// Drops a request never carried out (its requester gave up waiting).
    public static func withdraw(_ id: String, in instance: String) {
        try? Files.remove(Path.join(directory(instance), id + ".request.yaml"))
    }
}
