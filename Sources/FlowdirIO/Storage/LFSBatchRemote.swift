import AsyncHTTPClient
import FlowdirCore
import Foundation
import NIOCore
import NIOHTTP1

/// A Git LFS server over http(s) (GitHub, GitLab, Gitea, giftless…):
/// the batch API (`POST <lfs url>/objects/batch`) and its `basic`
/// transfers, with the user's git credentials (`git credential fill`)
/// when the server asks for them. Bodies are streamed both ways.
public struct LFSBatchRemote: ContentRemote {
    public let name: String
    /// The LFS API's base: `https://host/repo.git/info/lfs`, or the repository's `lfs.url`.
    public let url: String
    let http: HTTPClient
    /// The user's credentials for the server, once asked for (a 401), from git's helpers.
    let credentials: Locked<GitCredential?>
    let credentialHelper: @Sendable (_ url: String) async -> GitCredential?

    public init(name: String, url: String, http: HTTPClient = JobAPIClient.http,
                credentialHelper: @escaping @Sendable (String) async -> GitCredential? = GitCredential.fill) {
        self.name = name
        var u = url
        while u.hasSuffix("/") { u.removeLast() }
        self.url = u
        self.http = http
        self.credentialHelper = credentialHelper
        credentials = Locked(nil)
    }

    struct Action {
        var href: String
        var headers: [(String, String)]
    }

    struct Answer {
        /// oid → what to do for it; an oid absent needs nothing (the server has it, for an upload).
        var actions: [String: (transfer: Action?, verify: Action?)] = [:]
        var errors: [String: (code: Int, message: String)] = [:]
    }

    public func holding(_ pointers: [LFSPointer]) async throws(ContentRemoteError) -> Set<String> {
        guard !pointers.isEmpty else { return [] }
        // A download batch says which the server has: those with a download action.
        let answer = try await batch("download", pointers)
        return Set(pointers.map(\.oid).filter { answer.actions[$0]?.transfer != nil })
    }

    @discardableResult
    public func upload(_ pointers: [LFSPointer], from store: ContentStore) async throws(ContentRemoteError) -> Set<String> {
        guard !pointers.isEmpty else { return [] }
        let answer = try await batch("upload", pointers)
        var sent = Set<String>()
        for p in pointers {
            if let e = answer.errors[p.oid] { throw .refused(remote: name, why: "\(p.oid.prefix(12))…: \(e.code) \(e.message)") }
            guard let action = answer.actions[p.oid], let put = action.transfer else { continue }  // the server has it
            let good: Bool
            do throws(ContentStore.Failure) { good = try store.verify(p) } catch { throw .corrupt(error) }
            guard good else { throw .corrupt(.mismatch(path: store.path(of: p.oid), expected: p, sha256: "(another)", size: p.size)) }
            var request = HTTPClientRequest(url: put.href)
            request.method = .PUT
            for (k, v) in put.headers { request.headers.add(name: k, value: v) }
            if request.headers["Content-Type"].isEmpty { request.headers.add(name: "Content-Type", value: "application/octet-stream") }
            request.body = .stream(FileChunks(path: store.path(of: p.oid)), length: .known(Int64(p.size)))
            let status = try await send(request, what: "upload of \(p.oid.prefix(12))…")
            guard (200..<300).contains(status) else { throw .refused(remote: name, why: "the upload of \(p.oid.prefix(12))… was answered \(status)") }
            if let verify = action.verify {
                var v = HTTPClientRequest(url: verify.href)
                v.method = .POST
                for (k, val) in verify.headers { v.headers.add(name: k, value: val) }
                v.headers.replaceOrAdd(name: "Content-Type", value: "application/vnd.git-lfs+json")
                v.headers.replaceOrAdd(name: "Accept", value: "application/vnd.git-lfs+json")
                v.body = .bytes(ByteBuffer(bytes: JSONValue.object(["oid": .string(p.oid), "size": .number(Double(p.size))]).bytes))
                let s = try await send(v, what: "verify of \(p.oid.prefix(12))…")
                guard (200..<300).contains(s) else { throw .refused(remote: name, why: "the server did not verify \(p.oid.prefix(12))… (\(s))") }
            }
            sent.insert(p.oid)
        }
        return sent
    }

    public func download(_ pointers: [LFSPointer], into store: ContentStore) async throws(ContentRemoteError) {
        let wanted = pointers.filter { !store.has($0) }
        guard !wanted.isEmpty else { return }
        let answer = try await batch("download", wanted)
        for p in wanted {
            if let e = answer.errors[p.oid] {
                if e.code == 404 || e.code == 410 { throw .missing(remote: name, oid: p.oid) }
                throw .refused(remote: name, why: "\(p.oid.prefix(12))…: \(e.code) \(e.message)")
            }
            guard let get = answer.actions[p.oid]?.transfer else { throw .missing(remote: name, oid: p.oid) }
            var request = HTTPClientRequest(url: get.href)
            for (k, v) in get.headers { request.headers.add(name: k, value: v) }
            let receiver: ContentStore.Receiver
            do throws(ContentStore.Failure) { receiver = try store.receive(p) } catch { throw .local(error) }
            do {
                let response = try await http.execute(request, timeout: .hours(6))
                guard response.status.code == 200 else {
                    receiver.abandon()
                    throw ContentRemoteError.refused(remote: name, why: "the download of \(p.oid.prefix(12))… was answered \(response.status.code)")
                }
                for try await buffer in response.body {
                    try buffer.withUnsafeReadableBytes { (b: UnsafeRawBufferPointer) throws in try receiver.write(b) }
                }
                _ = try receiver.finish()
            } catch let e as ContentRemoteError {
                receiver.abandon()
                throw e
            } catch let e as ContentStore.Failure {
                receiver.abandon()
                if case .mismatch = e { throw .refused(remote: name, why: "it sent \(e)") }
                throw .local(e)
            } catch {
                receiver.abandon()
                throw .unreachable(remote: name, why: "\(error)")
            }
        }
    }

    // MARK: The batch API

    func batch(_ operation: String, _ pointers: [LFSPointer]) async throws(ContentRemoteError) -> Answer {
        let body = JSONValue.object([
            "operation": .string(operation),
            "transfers": .array([.string("basic")]),
            "hash_algo": .string("sha256"),
            "objects": .array(pointers.map { .object(["oid": .string($0.oid), "size": .number(Double($0.size))]) }),
        ]).bytes
        for attempt in 0..<2 {
            var request = HTTPClientRequest(url: url + "/objects/batch")
            request.method = .POST
            request.headers.add(name: "Accept", value: "application/vnd.git-lfs+json")
            request.headers.add(name: "Content-Type", value: "application/vnd.git-lfs+json")
            if let c = credentials.locked({ $0 }) { request.headers.add(name: "Authorization", value: c.basic) }
            request.body = .bytes(ByteBuffer(bytes: body))
            let response: HTTPClientResponse
            let bytes: [UInt8]
            do {
                response = try await http.execute(request, timeout: .seconds(60))
                var buffer = try await response.body.collect(upTo: 64 << 20)
                bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            } catch {
                throw .unreachable(remote: name, why: "\(error)")
            }
            if response.status.code == 401, attempt == 0 {
                guard let c = await credentialHelper(url) else {
                    throw .refused(remote: name, why: "401: the server wants credentials, and git's credential helpers gave none")
                }
                credentials.locked { $0 = c }
                continue
            }
            // Some servers (giftless) answer a download batch of objects they all lack with a 404.
            if response.status.code == 404, operation == "download" {
                var answer = Answer()
                for p in pointers { answer.errors[p.oid] = (404, "not on the server") }
                return answer
            }
            guard response.status.code == 200 else {
                let message = JSONValue.parse(bytes)?["message"]?.stringValue ?? String(decoding: bytes.prefix(200), as: UTF8.self)
                throw .refused(remote: name, why: "the batch API answered \(response.status.code): \(message)")
            }
            guard let json = JSONValue.parse(bytes), case .array(let objects)? = json["objects"] else {
                throw .refused(remote: name, why: "the batch API's answer is not Git LFS's JSON")
            }
            var answer = Answer()
            for o in objects {
                guard let oid = o["oid"]?.stringValue else { continue }
                if let e = o["error"] {
                    var code = 0
                    if case .number(let n)? = e["code"], n.isFinite, abs(n) < 10_000 { code = Int(n) }
                    answer.errors[oid] = (code, e["message"]?.stringValue ?? "")
                    continue
                }
                func action(_ key: String) -> Action? {
                    guard let a = o["actions"]?[key], let href = a["href"]?.stringValue else { return nil }
                    var headers: [(String, String)] = []
                    if case .object(let h)? = a["header"] { for (k, v) in h { if let s = v.stringValue { headers.append((k, s)) } } }
                    return Action(href: href, headers: headers)
                }
                let transfer = action(operation)
                if transfer != nil || action("verify") != nil { answer.actions[oid] = (transfer, action("verify")) }
            }
            return answer
        }
        throw .refused(remote: name, why: "401: the server refused the credentials git's helpers gave")
    }

    func send(_ request: HTTPClientRequest, what: String) async throws(ContentRemoteError) -> Int {
        do {
            let response = try await http.execute(request, timeout: .hours(6))
            _ = try await response.body.collect(upTo: 1 << 20)
            return Int(response.status.code)
        } catch {
            throw .unreachable(remote: name, why: "\(what): \(error)")
        }
    }
}

/// A file's bytes as an async sequence of buffers, read a piece at a time.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let path: String

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle?
        var failed = false

        mutating func next() async throws -> ByteBuffer? {
            guard let handle else { throw ContentStore.Failure.notRegular("the content to send") }
            guard let data = try handle.read(upToCount: 1 << 20), !data.isEmpty else {
                try? handle.close()
                return nil
            }
            return ByteBuffer(bytes: data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: FileHandle(forReadingAtPath: path)) }
}

/// A user name and password for a server, from git's credential helpers.
public struct GitCredential: Sendable {
    public var username: String
    public var password: String

    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    var basic: String { "Basic " + Data("\(username):\(password)".utf8).base64EncodedString() }

    /// `git credential fill` for `url`: the user's helpers answer; nothing is asked on a terminal.
    public static func fill(_ url: String) async -> GitCredential? { await fill(url, environment: [:]) }

    /// `environment`: added to git's (a test's own git config).
    public static func fill(_ url: String, environment: [String: String]) async -> GitCredential? {
        guard let u = URL(string: url), let scheme = u.scheme, let host = u.host else { return nil }
        var request = "protocol=\(scheme)\nhost=\(host)\(u.port.map { ":\($0)" } ?? "")\n"
        if !u.path.isEmpty { request += "path=\(u.path.dropFirst())\n" }
        request += "\n"
        let r = await PipedCommand.run(["/usr/bin/env", "git", "credential", "fill"], input: .bytes(Array(request.utf8)),
                                       environment: ["GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""].merging(environment) { $1 })
        guard r.status == 0 else { return nil }
        var user: String?, pass: String?
        for line in r.output.split(separator: "\n") {
            if line.hasPrefix("username=") { user = String(line.dropFirst(9)) }
            if line.hasPrefix("password=") { pass = String(line.dropFirst(9)) }
        }
        guard let user, let pass else { return nil }
        return GitCredential(username: user, password: pass)
    }
}
