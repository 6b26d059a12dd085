#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// Where the content of large files goes when an instance syncs, and
/// comes from when it is needed here (docs/storage.md): beside the sync
/// remote, as Git LFS keeps it, so git-lfs itself finds it there.
public protocol ContentRemote: Sendable {
    /// For messages: the remote's name and where it is.
    var name: String { get }
    /// Which of these objects the remote holds, at the size their pointer names.
    func holding(_ pointers: [LFSPointer]) async throws(ContentRemoteError) -> Set<String>
    /// Sends those of these objects the remote lacks, from the local store,
    /// and returns the oids it sent. Each is checked against its oid as it
    /// is read: a local object changed by hand is never sent.
    @discardableResult
    func upload(_ pointers: [LFSPointer], from store: ContentStore) async throws(ContentRemoteError) -> Set<String>
    /// Fetches these objects into the local store, each checked before it takes its place.
    func download(_ pointers: [LFSPointer], into store: ContentStore) async throws(ContentRemoteError)
    /// Opens one connection for what follows (a sync's fetch, upload and
    /// push), returning the environment git must run with to use it too;
    /// `endSharing` closes it. A remote without connections does nothing.
    func startSharing() async -> [String: String]
    func endSharing() async
    /// Which of these objects the remote holds with the right bytes: each
    /// read and hashed, not only its size looked at (`storage free --verify`).
    /// `scratch`: a folder of this machine's for what must be read here.
    func holdingVerified(_ pointers: [LFSPointer], scratch: String) async throws(ContentRemoteError) -> Set<String>
}

extension ContentRemote {
    public func startSharing() async -> [String: String] { [:] }
    public func endSharing() async {}

    /// Each object the remote says it holds is fetched into a scratch store,
    /// checked as it comes (as every download is), and thrown away: one at
    /// a time, so the scratch space is one object's.
    public func holdingVerified(_ pointers: [LFSPointer], scratch: String) async throws(ContentRemoteError) -> Set<String> {
        let held = try await holding(pointers)
        var good = Set<String>()
        for p in pointers where held.contains(p.oid) {
            let dir = scratch + "/verify-" + RandomID.token().prefix(12)
            defer { try? Files.removeTree(dir) }
            do throws(ContentRemoteError) {
                try await download([p], into: ContentStore(gitDirectory: dir))
                good.insert(p.oid)
            } catch {
                switch error {
                case .missing, .refused: continue  // gone meanwhile, or other bytes: not a copy
                default: throw error
                }
            }
        }
        return good
    }
}

public enum ContentRemoteError: Error, CustomStringConvertible, Sendable {
    /// The remote cannot be reached (a host down, a network gone): try later.
    case unreachable(remote: String, why: String)
    /// The remote lacks an object asked for.
    case missing(remote: String, oid: String)
    /// The remote answered, but refused or failed (permissions, a full disk there, a server error).
    case refused(remote: String, why: String)
    /// A local object is not what its name says: it is not sent.
    case corrupt(ContentStore.Failure)
    /// The local store could not take what came (a full disk here).
    case local(ContentStore.Failure)
    /// No way to reach the content of this remote's URL.
    case unsupported(remote: String, url: String)

    public var description: String {
        switch self {
        case .unreachable(let r, let why): "\(r) is unreachable: \(why)"
        case .missing(let r, let oid): "\(r) does not have the content \(oid.prefix(12))…"
        case .refused(let r, let why): "\(r) refused: \(why)"
        case .corrupt(let f): "not sent: \(f)"
        case .local(let f): "\(f)"
        case .unsupported(let r, let url): "\(r)'s URL \(url) is neither a path, a file: URL, an ssh remote nor an http(s) Git LFS server"
        }
    }

    public var hint: String? {
        switch self {
        case .unreachable: "it is fetched when it can be; check the network, or `flowdir storage get` later"
        case .missing: "the machine that made it has not synced it yet: run `flowdir sync` there"
        case .corrupt: "`flowdir storage verify` lists what changed; get it again with `flowdir storage get`"
        case .local(let f) where f.isNoSpace: "free space (`flowdir storage free`) and try again"
        default: nil
        }
    }

    public var isUnreachable: Bool {
        if case .unreachable = self { return true }
        return false
    }
}

/// A git remote's URL, as far as where its content lives goes.
public enum RemoteLocation: Equatable, Sendable {
    /// A repository on this machine (a path, or `file://`).
    case path(String)
    /// A repository reached with ssh: `[user@]host` (or an ssh config alias), its port, its path there.
    case ssh(destination: String, port: Int?, path: String)
    /// An http(s) Git LFS server's API (`…/info/lfs`).
    case lfsServer(String)

    /// Reads `url` as git does: `file:///p`, `/p`, `./p`, `ssh://[user@]host[:port]/p`,
    /// `[user@]host:p` (scp-like), `https://host/p` (its LFS API is `<url>.git/info/lfs`,
    /// or `lfsURL` when the repository names one). `base` resolves a relative path.
    public static func parse(_ url: String, base: String, lfsURL: String? = nil) -> RemoteLocation? {
        if let lfsURL, lfsURL.hasPrefix("https://") || lfsURL.hasPrefix("http://") { return .lfsServer(lfsURL) }
        guard !url.isEmpty, !url.hasPrefix("-") else { return nil }
        if url.hasPrefix("file://") { return .path(String(url.dropFirst(7))) }
        if url.hasPrefix("/") { return .path(url) }
        if url.hasPrefix("https://") || url.hasPrefix("http://") {
            var u = url
            while u.hasSuffix("/") { u.removeLast() }
            return .lfsServer(u.hasSuffix(".git") ? u + "/info/lfs" : u + ".git/info/lfs")
        }
        if url.hasPrefix("ssh://") || url.hasPrefix("git+ssh://") || url.hasPrefix("ssh+git://") {
            let rest = url[url.index(url.firstIndex(of: ":")!, offsetBy: 3)...]
            guard let slash = rest.firstIndex(of: "/") else { return nil }
            var host = String(rest[..<slash])
            var port: Int?
            // [user@]host[:port], or [ipv6]:port
            if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]"), let p = Int(host[host.index(after: colon)...]), (1...65535).contains(p) {
                port = p
                host = String(host[..<colon])
            }
            host = host.replacingOccurrences(of: "[", with: "").replacingOccurrences(of: "]", with: "")
            var path = String(rest[slash...])
            // ssh://host/~/p is the home folder's p.
            if path.hasPrefix("/~") { path.removeFirst() }
            guard !host.isEmpty, !host.hasPrefix("-") else { return nil }
            return .ssh(destination: host, port: port, path: path)
        }
        // scp-like: a colon before any slash.
        if let colon = url.firstIndex(of: ":"), !url[..<colon].contains("/") {
            let host = String(url[..<colon]), path = String(url[url.index(after: colon)...])
            guard !host.isEmpty, !path.isEmpty else { return nil }
            return .ssh(destination: host, port: nil, path: path)
        }
        return .path(Path.join(base, url))
    }
}

/// The content remote beside a git remote of an instance: where `git lfs`
/// would send and fetch (the remote's URL, or `lfs.url` / `remote.<name>.lfsurl`).
public enum ContentRemotes {
    public static func forGitRemote(_ remote: String, of repo: GitRepository, instance: String) throws(ContentRemoteError) -> any ContentRemote {
        guard let url = repo.configString("remote.\(remote).url") else {
            throw .unsupported(remote: remote, url: "(none: `git remote add \(remote) URL` first)")
        }
        let lfsURL = repo.configString("remote.\(remote).lfsurl") ?? repo.configString("lfs.url")
        switch RemoteLocation.parse(url, base: instance, lfsURL: lfsURL) {
        case .path(let p)?: return LocalContentRemote(name: remote, repository: p)
        case .ssh(let destination, let port, let path)?:
            let sshCommand = getenv("GIT_SSH_COMMAND").map { String(cString: $0) } ?? repo.configString("core.sshCommand")
            return SSHContentRemote(name: remote, destination: destination, port: port, path: path, sshCommand: sshCommand)
        case .lfsServer(let api)?: return LFSBatchRemote(name: remote, url: api)
        case nil: throw .unsupported(remote: remote, url: url)
        }
    }
}
