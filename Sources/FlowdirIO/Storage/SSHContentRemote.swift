import FlowdirCore
import Foundation

/// A remote repository reached with ssh: its content in its `lfs/objects/`
/// (where git-lfs's ssh transfer looks too), copied with the user's own
/// ssh — their config, keys and agent, `GIT_SSH_COMMAND` and
/// `core.sshCommand` as git uses them — and nothing of flowdir needed on
/// the far side but a POSIX shell. Several objects share one connection.
public struct SSHContentRemote: ContentRemote {
    public let name: String
    let ssh: SSHCommand
    /// The repository's path on the host, as the URL gives it (relative: to the home folder).
    let path: String

    public init(name: String, destination: String, port: Int?, path: String, sshCommand: String?) {
        self.name = name
        self.path = path
        ssh = SSHCommand(destination: destination, port: port, sshCommand: sshCommand)
    }

    public func startSharing() async -> [String: String] {
        await ssh.startSharing()
        return ssh.sharedGitSSHCommand.map { ["GIT_SSH_COMMAND": $0] } ?? [:]
    }

    public func endSharing() async { await ssh.stopSharing() }

    /// Shell words that set `g` to the repository's git directory on the host.
    var gitDirectoryScript: String {
        "g=\(SSHCommand.quotePath(path)); if [ -d \"$g/.git\" ]; then g=\"$g/.git\"; fi; [ -d \"$g\" ] || { echo \"no repository at $g\" >&2; exit 4; }"
    }

    public func holding(_ pointers: [LFSPointer]) async throws(ContentRemoteError) -> Set<String> {
        guard !pointers.isEmpty else { return [] }
        let script = gitDirectoryScript + "; while read f s; do [ -f \"$g/$f\" ] && [ \"$(wc -c < \"$g/$f\")\" -eq \"$s\" ] && echo \"$f\"; done; true"
        let list = pointers.map { "\($0.objectPath) \($0.size)\n" }.joined()
        let r = await ssh.run(script, input: .bytes(Array(list.utf8)))
        try check(r)
        let held = Set(r.output.split(separator: "\n").map { String($0.split(separator: "/").last ?? "") })
        return Set(pointers.map(\.oid).filter(held.contains))
    }

    /// Each session on the host costs ~0.2 s even over a shared connection
    /// (the host's sshd starts a shell): what a sync sends in all is sent
    /// without asking first when it is less than this, each object's
    /// session checking on the host and discarding what it already holds.
    static let askFirstBytes: Int64 = 64 << 20

    @discardableResult
    public func upload(_ pointers: [LFSPointer], from store: ContentStore) async throws(ContentRemoteError) -> Set<String> {
        guard !pointers.isEmpty else { return [] }
        return try await ssh.sharingOneConnection { () async throws(ContentRemoteError) -> Set<String> in
            let total = pointers.reduce(Int64(0)) { $0 + $1.size }
            let held = total >= Self.askFirstBytes ? try await holding(pointers) : []
            var sent = Set<String>()
            for p in pointers where !held.contains(p.oid) {
                // Checked before it goes: a local object changed by hand is never sent.
                let good: Bool
                do throws(ContentStore.Failure) { good = try store.verify(p) } catch { throw .corrupt(error) }
                guard good else {
                    throw .corrupt(.mismatch(path: store.path(of: p.oid), expected: p, sha256: "(another)", size: p.size))
                }
                let dir = Path.directory(of: p.objectPath)
                let script = gitDirectoryScript + "; set -e; o=\"$g/\(p.objectPath)\"; "
                    + "if [ -f \"$o\" ] && [ \"$(wc -c < \"$o\")\" -eq \(p.size) ]; then cat >/dev/null; echo held; exit 0; fi; "
                    + "mkdir -p \"$g/\(dir)\" \"$g/lfs/tmp\"; t=\"$g/lfs/tmp/\(p.oid).$$\"; "
                    + "cat > \"$t\"; n=$(wc -c < \"$t\"); if [ \"$n\" -ne \(p.size) ]; then rm -f \"$t\"; echo \"received $n of \(p.size) bytes\" >&2; exit 3; fi; "
                    + "chmod 444 \"$t\"; mv -f \"$t\" \"$o\""
                let r = await ssh.run(script, input: .file(store.path(of: p.oid)))
                try check(r)
                if !r.output.hasPrefix("held") { sent.insert(p.oid) }
            }
            return sent
        }
    }

    public func download(_ pointers: [LFSPointer], into store: ContentStore) async throws(ContentRemoteError) {
        let wanted = pointers.filter { !store.has($0) }
        guard !wanted.isEmpty else { return }
        try await ssh.sharingOneConnection { () async throws(ContentRemoteError) in
            for p in wanted {
                let receiver: ContentStore.Receiver
                do throws(ContentStore.Failure) { receiver = try store.receive(p) } catch { throw .local(error) }
                let script = gitDirectoryScript + "; f=\"$g/\(p.objectPath)\"; [ -f \"$f\" ] || { echo \"missing \(p.oid)\" >&2; exit 5; }; cat \"$f\""
                var writeFailure: ContentStore.Failure?
                let r = await ssh.run(script, input: .none) { bytes in
                    guard writeFailure == nil else { return }
                    do throws(ContentStore.Failure) { try receiver.write(bytes) } catch { writeFailure = error }
                }
                if r.status == 5 {
                    receiver.abandon()
                    throw .missing(remote: name, oid: p.oid)
                }
                do throws(ContentRemoteError) { try check(r) } catch {
                    receiver.abandon()
                    throw error
                }
                if let writeFailure {
                    receiver.abandon()
                    throw .local(writeFailure)
                }
                do throws(ContentStore.Failure) { _ = try receiver.finish() } catch {
                    if case .mismatch = error { throw .refused(remote: name, why: "it sent \(error)") }
                    throw .local(error)
                }
            }
        }
    }

    func check(_ r: SSHCommand.Result) throws(ContentRemoteError) {
        switch r.status {
        case 0: return
        // ssh's own failure: no connection, a host key, a key refused.
        case 255, 127: throw .unreachable(remote: name, why: SSHCommand.words(r.errors))
        default: throw .refused(remote: name, why: SSHCommand.words(r.errors))
        }
    }
}
