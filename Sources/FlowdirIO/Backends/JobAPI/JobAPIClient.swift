import AsyncHTTPClient
import FlowdirCore
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// Replicate's predictions API (docs/jobserver.md, "Routes") on async-http-client:
/// each call one request, its failure classified (`JobAPIError`); no
/// retries or waits here (`EndpointLane` decides those).
public final class JobAPIClient: Sendable {
    public let endpoint: EndpointConfig
    let token: String?
    let http: HTTPClient
    let base: String
    /// Seconds since the epoch, for `Retry-After` given as a date.
    let now: @Sendable () -> Double
    let clock: FlowdirClock

    /// flowdir's own: a connection that cannot be made fails at once (no
    /// retries inside the client: `EndpointLane` backs off and says
    /// "Offline" meanwhile). Lives as long as the process.
    public static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(10)
        // A create held for its job's end (`Prefer: wait`) keeps its
        // connection that long: room for `EndpointLane.mostHeld` of them
        // and the polls, downloads and other creates beside (default 8).
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 16
        // A redirect would carry the token elsewhere: none are followed.
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    public init(endpoint: EndpointConfig, token: String?, http: HTTPClient = JobAPIClient.http,
                clock: FlowdirClock = .system) {
        self.endpoint = endpoint
        self.token = token
        self.http = http
        self.clock = clock
        self.now = { clock.now().seconds }
        var base = endpoint.url
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
    }

    /// - Parameter wait: seconds the server may hold the answer for the job
    ///   to end (`Prefer: wait=N`, Replicate's sync mode); 0 answers at once.
    ///   Either way the answer is the prediction as it is then.
    public func create(model: String?, version: String?, input: [String: JSONValue], webhook: String?,
                       wait: Int = 0) async throws(JobAPIError) -> Prediction {
        var body: [String: JSONValue] = ["input": .object(input)]
        if let version { body["version"] = .string(version) }
        if let webhook {
            body["webhook"] = .string(webhook)
            body["webhook_events_filter"] = .array([.string("start"), .string("completed")])
        }
        let url = model.map { "\(base)/models/\($0)/predictions" } ?? "\(base)/predictions"
        let prefer = PreferWait.header(seconds: wait).map { [("Prefer", $0)] } ?? []
        return try prediction(try await send(.POST, url, body: JSONValue.object(body).bytes, headers: prefer))
    }

    public func get(_ id: String) async throws(JobAPIError) -> Prediction {
        try prediction(try await send(.GET, "\(base)/predictions/\(Self.escape(id))"))
    }

    /// One page of the predictions, newest first; `next` is the URL of the next page.
    public func list(cursor: String?) async throws(JobAPIError) -> (predictions: [Prediction], next: String?) {
        let url = cursor ?? "\(base)/predictions"
        guard Self.origin(url) == Self.origin(base) else {
            throw redacted(.notAPI(status: 200, snippet: "a next page on another server: \(Self.clean(String(url.prefix(120))))"))
        }
        let (status, bytes) = try await send(.GET, url)
        guard let json = JSONValue.parse(bytes), case .array(let results)? = json["results"] else {
            throw redacted(.notAPI(status: status, snippet: Self.snippet(bytes)))
        }
        // Replicate's `next` is a whole URL; a path alone is taken on this server.
        let next = json["next"]?.stringValue.map { $0.hasPrefix("/") ? (Self.origin(base) ?? "") + $0 : $0 }
        return (results.compactMap(Prediction.init(json:)).map(redacted), next)
    }

    public func cancel(_ id: String) async throws(JobAPIError) -> Prediction {
        try prediction(try await send(.POST, "\(base)/predictions/\(Self.escape(id))/cancel"))
    }

    /// `POST /files` (multipart, field `content`): the file's URL.
    public func upload(_ bytes: [UInt8], filename: String, contentType: String) async throws(JobAPIError) -> String {
        let boundary = "flowdir-" + RandomID.uuid()
        var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"content\"; filename=\"\(filename.replacingOccurrences(of: "\"", with: ""))\"\r\nContent-Type: \(contentType)\r\n\r\n".utf8)
        body += bytes
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        let (status, answer) = try await send(.POST, "\(base)/files", body: body, contentType: "multipart/form-data; boundary=\(boundary)")
        guard let json = JSONValue.parse(answer), let url = json["urls"]?["get"]?.stringValue else {
            throw redacted(.notAPI(status: status, snippet: Self.snippet(answer)))
        }
        return url
    }

    /// An output: a `data:` URI decoded, or a URL downloaded (the token
    /// only to the endpoint's own server).
    public func fetchOutput(_ reference: String, limit: Int) async throws(JobAPIError) -> [UInt8] {
        if reference.hasPrefix("data:") {
            guard let bytes = Self.decodeDataURI(reference) else { throw .notAPI(status: 200, snippet: "a data: URI that cannot be decoded") }
            guard bytes.count <= limit else { throw .tooLarge(limit: limit) }
            return bytes
        }
        guard reference.hasPrefix("http://") || reference.hasPrefix("https://") else {
            throw redacted(.notAPI(status: 200, snippet: "an output that is neither a URL nor a data: URI: \(Self.clean(String(reference.prefix(80))))"))
        }
        return try await send(.GET, reference, limit: limit, raw: true).1
    }

    public static func dataURI(_ bytes: [UInt8], contentType: String) -> String {
        "data:\(contentType);base64," + Data(bytes).base64EncodedString()
    }

    public static func decodeDataURI(_ uri: String) -> [UInt8]? {
        guard uri.hasPrefix("data:"), let comma = uri.firstIndex(of: ",") else { return nil }
        let meta = uri[uri.index(uri.startIndex, offsetBy: 5)..<comma]
        let payload = String(uri[uri.index(after: comma)...])
        if meta.lowercased().hasSuffix(";base64") {
            return Data(base64Encoded: payload.removingPercentEncoding ?? payload, options: .ignoreUnknownCharacters).map(Array.init)
        }
        return percentDecoded(payload)
    }

    /// `%XX` as the byte it names, whatever the bytes make (an image is not UTF-8).
    static func percentDecoded(_ text: String) -> [UInt8]? {
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 65...70: c - 55
            case 97...102: c - 87
            default: nil
            }
        }
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let b = bytes.popFirst() {
            guard b == UInt8(ascii: "%") else { out.append(b); continue }
            guard bytes.count >= 2, let hi = hex(bytes[bytes.startIndex]), let lo = hex(bytes[bytes.startIndex + 1]) else { return nil }
            out.append(hi << 4 | lo)
            bytes = bytes.dropFirst(2)
        }
        return out
    }

    // MARK: Requests

    /// A model's logs and error end up in the run's log and the node's
    /// error, so in git: the token is taken out if the model printed it.
    func redacted(_ p: Prediction) -> Prediction {
        var p = p
        p.logs = p.logs.map(redacted)
        p.error = p.error.map(redacted)
        return p
    }

    func prediction(_ answer: (Int, [UInt8])) throws(JobAPIError) -> Prediction {
        guard let json = JSONValue.parse(answer.1), let p = Prediction(json: json) else {
            throw redacted(.notAPI(status: answer.0, snippet: Self.snippet(answer.1)))
        }
        return redacted(p)
    }

    /// One request: 2xx gives the body; anything else an error, classified.
    /// `raw` (a download): the deadline is for each piece of the body, not
    /// the whole, so a large output that keeps coming is not cut off.
    func send(_ method: HTTPMethod, _ url: String, body: [UInt8]? = nil, contentType: String = "application/json",
              headers extra: [(String, String)] = [], limit: Int = 64 << 20, raw: Bool = false) async throws(JobAPIError) -> (Int, [UInt8]) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "User-Agent", value: "flowdir")
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let token, Self.origin(url) == Self.origin(base) {
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
        }
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let answer: Answer
        do {
            answer = try await Self.exchange(request, http: http, timeout: endpoint.requestTimeout, limit: limit, idle: raw, clock: clock)
        } catch let error as JobAPIError {
            throw redacted(error)
        } catch {
            throw redacted(.transport(error, timeout: endpoint.requestTimeout, limit: limit))
        }
        let (status, headers, bytes) = (answer.status, answer.headers, answer.bytes)
        if (200..<300).contains(status) { return (status, bytes) }
        let retryAfter = headers.first(name: "Retry-After").flatMap { Self.retryAfter($0, now: now()) }
        if (300..<400).contains(status) {
            // Not followed: the token would go along to wherever it points.
            let location = headers.first(name: "Location").map { " to \(Self.clean(String($0.prefix(200))))" } ?? ""
            throw redacted(.http(status: status, message: "redirected\(location)", retryAfter: nil))
        }
        if let json = JSONValue.parse(bytes), case .object = json {
            throw redacted(.http(status: status, message: Self.clean(Self.words(json) ?? ""), retryAfter: retryAfter))
        }
        // A gateway's own page for a status that means "try later" is still that status.
        if JobAPIError.transientStatuses.contains(status) || raw || bytes.isEmpty {
            throw redacted(.http(status: status, message: bytes.isEmpty ? "" : Self.snippet(bytes), retryAfter: retryAfter))
        }
        throw redacted(.notAPI(status: status, snippet: Self.snippet(bytes)))
    }

    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var bytes: [UInt8]
    }

    /// The request and its whole body, or `.timeout` once `timeout` seconds
    /// pass without an answer (async-http-client's own deadline ends at the
    /// head: a server that stalls in the body would hang the caller).
    static func exchange(_ request: HTTPClientRequest, http: HTTPClient, timeout: Double, limit: Int, idle: Bool,
                         clock: FlowdirClock) async throws -> Answer {
        let progress = LastProgress(clock)
        let window = Duration.milliseconds(Int64((timeout * 1000).rounded(.up)))
        return try await withThrowingTaskGroup(of: Answer?.self) { group in
            group.addTask {
                let response = try await http.execute(request, timeout: .milliseconds(Int64((timeout * 1000).rounded(.up))))
                var bytes: [UInt8] = []
                if let length = response.headers.first(name: "Content-Length").flatMap(Int.init), length > limit {
                    throw NIOTooManyBytesError(maxBytes: limit)
                }
                for try await var chunk in response.body {
                    guard bytes.count + chunk.readableBytes <= limit else { throw NIOTooManyBytesError(maxBytes: limit) }
                    bytes += chunk.readBytes(length: chunk.readableBytes) ?? []
                    if idle { progress.now() }
                }
                return Answer(status: Int(response.status.code), headers: response.headers, bytes: bytes)
            }
            group.addTask {
                // The watchdog: ends when the deadline since the last progress passes.
                while true {
                    let waited = clock.instant - progress.last
                    if waited >= window { throw JobAPIError.timeout(seconds: timeout) }
                    try await clock.sleep(for: window - waited)
                }
            }
            defer { group.cancelAll() }
            while let answer = try await group.next() {
                if let answer { return answer }
            }
            throw JobAPIError.timeout(seconds: timeout)
        }
    }

    final class LastProgress: Sendable {
        private let clock: FlowdirClock
        private let time: Synchronization.Mutex<Moment>
        init(_ clock: FlowdirClock) {
            self.clock = clock
            time = Synchronization.Mutex(clock.instant)
        }
        var last: Moment { time.withLock { $0 } }
        func now() { time.withLock { $0 = clock.instant } }
    }

    /// The server's own words in an error body: Replicate's `detail` and
    /// `title` (RFC 9457), or `error` / `message` of other servers.
    static func words(_ json: JSONValue) -> String? {
        for key in ["detail", "title", "error", "message"] {
            switch json[key] {
            case .string(let s)? where !s.trimmingCharacters(in: .whitespaces).isEmpty: return s
            case .object(let o)?: if let m = o["message"]?.stringValue { return m }
            default: continue
            }
        }
        return nil
    }

    /// The token never leaves in an error, even when the server echoes it.
    func redacted(_ error: JobAPIError) -> JobAPIError {
        switch error {
        case .http(let status, let message, let retryAfter): .http(status: status, message: redacted(message), retryAfter: retryAfter)
        case .notAPI(let status, let snippet): .notAPI(status: status, snippet: redacted(snippet))
        case .reset(let why): .reset(redacted(why))
        case .unreachable(let why): .unreachable(redacted(why))
        case .tls(let why): .tls(redacted(why))
        case .timeout, .tooLarge: error
        }
    }

    func redacted(_ text: String) -> String {
        guard let token, !token.isEmpty, text.contains(token) else { return text }
        return text.replacingOccurrences(of: token, with: "[token]")
    }

    /// `Retry-After`: seconds, or an HTTP date.
    static func retryAfter(_ value: String, now: Double) -> Double? {
        let v = value.trimmingCharacters(in: .whitespaces)
        if v.first?.isNumber == true { return SubmitRetry.retryAfterSeconds(v) }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = f.date(from: v) else { return nil }
        let wait = max(0, date.timeIntervalSince1970 - now)
        return wait.isFinite && wait <= SubmitRetry.longestRetryAfter ? wait : nil
    }

    static func snippet(_ bytes: [UInt8]) -> String {
        clean(String(decoding: bytes.prefix(160), as: UTF8.self)) + (bytes.count > 160 ? "…" : "")
    }

    /// One line, no control characters.
    static func clean(_ s: String) -> String {
        String(s.unicodeScalars.map { $0.value < 32 || $0.value == 127 ? " " : Character($0) }).trimmingCharacters(in: .whitespaces)
    }

    static func escape(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_.~"))) ?? id
    }

    /// scheme://host:port, lowercased, the port made explicit.
    static func origin(_ url: String) -> String? {
        guard let u = URLComponents(string: url), let scheme = u.scheme?.lowercased(), let host = u.host?.lowercased() else { return nil }
        return "\(scheme)://\(host):\(u.port ?? (scheme == "https" ? 443 : 80))"
    }
}
