#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirPages
import FlowdirTemplates

/// Where `flowdir serve` is, for notifications: its URL and token in
/// `$XDG_STATE_HOME/flowdir/serve.yaml` (mode 600) while it runs, so a
/// watcher in another process (`flowdir watch` as a service, beside
/// `serve --no-watch`) can give each notification the page to open.
struct ServeRegistration: Sendable, Equatable {
    var url: String
    var token: String

    static func file(_ ctx: Context) -> String {
        ctx.stateHome + "/flowdir/serve.yaml"
    }

    func write(_ ctx: Context) {
        let file = Self.file(ctx)
        try? Files.makeDirectories(Path.directory(of: file))
        let text = YAMLWriter.document([ParamEntry(key: "pid", value: .int(Int(getpid()))), ParamEntry(key: "url", value: .string(url)),
                                        ParamEntry(key: "token", value: .string(token))],
                                       comments: ["flowdir serve, while it runs: notifications link to its pages."])
        // Made unreadable to others before the token is in it.
        let partial = file + ".\(getpid())"
        let fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        rename(partial, file)
    }

    static func remove(_ ctx: Context) {
        let file = Self.file(ctx)
        if Self.read(file)?.pid == getpid() { unlink(file) }
    }

    /// The serving flowdir's registration, if it still runs.
    static func current(file: String) -> ServeRegistration? {
        guard let r = read(file), ProcessTable.isAlive(r.pid) else { return nil }
        return r.registration
    }

    static func read(_ file: String) -> (pid: Int32, registration: ServeRegistration)? {
        guard let bytes = try? LocalFileSystem().readFile(file, limit: 4096),
              case .success(let doc) = InstanceCodec.document(bytes, file: file),
              case .int(let pid)? = doc[key: "pid"]?.value, let pid = Int32(exactly: pid),
              let url = doc[key: "url"]?.value.stringValue, let token = doc[key: "token"]?.value.stringValue else { return nil }
        return (pid, ServeRegistration(url: url, token: token))
    }
}

/// Gives each notification the page that shows it (`FLOWDIR_URL` for hooks,
/// a line of a desktop notification), when `flowdir serve` runs.
struct PageLinkNotifier: Notifier {
    let wrapped: any Notifier
    let server: @Sendable () -> ServeRegistration?
    let reader: InstanceReader

    func notify(_ event: FlowEvent) {
        var e = event
        if let s = server() {
            if let link = e.link {
                e.url = s.url + "/open?link=" + UIServer.percentEncoded(link) + "&token=" + s.token
            } else if let record = (try? reader.read(instanceRecordOnly: e.instance)) ?? nil {
                e.url = s.url + "/?token=" + s.token + "#/w/" + UIServer.percentEncoded(record.id) + (e.node.map { "/" + UIServer.percentEncoded($0) } ?? "")
            }
        }
        wrapped.notify(e)
    }
}
