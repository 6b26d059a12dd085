import AsyncHTTPClient
import FlowdirCore
import Foundation
import NIOCore
import NIOHTTP1

/// Replicate's predictions API (DESIGN.md §5, §12) on async-http-client:
/// each call one request, its failure classified (`JobAPIError`); no
/// retries or waits here (`EndpointLane` decides those).
public final class JobAPIClient: Sendable {
    public let endpoint: EndpointConfig
    let token: String?
    let http: HTTPClient
    let base: String
    /// Seconds since the epoch, for `Retry-After` given as a date.
    let now: @Sendable () -> Double

    /// flowdir's own: a connection that cannot be made fails at once (no
    /// retries inside the client: `EndpointLane` backs off and says
    /// "Offline" meanwhile). Lives as long as the process.
    public static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(10)
        // A redirect would carry the token elsewhere: none are followed.
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    public init(endpoint: EndpointConfig, token: String?, http: HTTPClient = JobAPIClient.http,
                now: @escaping @Sendable () -> Double = { SystemClock().now().seconds }) {
        self.endpoint = endpoint
        self.token = token
        self.http = http
        self.now = now
        var base = endpoint.url
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
    }

    public func create(model: String?, version: String?, input: [String: JSONValue], webhook: String?) async throws(JobAPIError) -> Prediction {
        var body: [String: JSONValue] = ["input": .object(input)]
        if let version { body["version"] = .string(version) }
        if let webhook {
            body["webhook"] = .string(webhook)
            body["webhook_events_filter"] = .array([.string("start"), .string("completed")])
        }
        let url = model.map { "\(base)/models/\($0)/predictions" } ?? "\(base)/predictions"
        return try prediction(try await send(.POST, url, body: JSONValue.object(body).bytes))
    }

    public func get(_ id: String) async throws(JobAPIError) -> Prediction {
        try prediction(try await send(.GET, "\(base)/predictions/\(Self.escape(id))"))
    }

    /// One page of the predictions, newest first; `next` is the URL of the next page.
    public func list(cursor: String?) async throws(JobAPIError) -> (predictions: [Prediction], next: String?) {
        let url = cursor ?? "\(base)/predictions"
        guard Self.origin(url) == Self.origin(base) else {
            throw .notAPI(status: 200, snippet: "a next page on another server: \(url)")
        }
        let (status, bytes) = try await send(.GET, url)
        guard let json = JSONValue.parse(bytes), case .array(let results)? = json["results"] else {
            throw .notAPI(status: status, snippet: Self.snippet(bytes))
        }
        return (results.compactMap(Prediction.init(json:)), json["next"]?.stringValue)
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
            throw .notAPI(status: status, snippet: Self.snippet(answer))
        }
        return url
    }

    /// An output: a `data:` URI decoded, or a URL downloaded (the token
    /// only to the endpoint's own server).
    public func fetchOutput(_ reference: String, limit: Int) async throws(JobAPIError) -> [UInt8] {
        if reference.hasPrefix("data:") {
            guard let bytes = Self.decodeDataURI(reference) else { throw .notAPI(status: 200, snippet: "a data: URI that cannot be decoded") }
            return bytes
        }
        guard reference.hasPrefix("http://") || reference.hasPrefix("https://") else {
            throw .notAPI(status: 200, snippet: "an output that is neither a URL nor a data: URI: \(reference.prefix(80))")
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
        if meta.hasSuffix(";base64") {
            return Data(base64Encoded: payload, options: .ignoreUnknownCharacters).map(Array.init)
        }
        return payload.removingPercentEncoding.map { Array($0.utf8) }
    }

    // MARK: Requests

    func prediction(_ answer: (Int, [UInt8])) throws(JobAPIError) -> Prediction {
        guard let json = JSONValue.parse(answer.1), let p = Prediction(json: json) else {
            throw .notAPI(status: answer.0, snippet: Self.snippet(answer.1))
        }
        return p
    }

    /// One request: 2xx gives the body; anything else an error, classified.
    func send(_ method: HTTPMethod, _ url: String, body: [UInt8]? = nil, contentType: String = "application/json",
              limit: Int = 64 << 20, raw: Bool = false) async throws(JobAPIError) -> (Int, [UInt8]) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "User-Agent", value: "flowdir")
        if let token, Self.origin(url) == Self.origin(base) {
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
        }
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let timeout = endpoint.requestTimeout
        let status: Int
        let headers: HTTPHeaders
        let bytes: [UInt8]
        do {
            let response = try await http.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
            status = Int(response.status.code)
            headers = response.headers
            var buffer = try await response.body.collect(upTo: limit)
            bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch {
            throw Self.classify(error, timeout: timeout)
        }
        if (200..<300).contains(status) { return (status, bytes) }
        let retryAfter = headers.first(name: "Retry-After").flatMap { Self.retryAfter($0, now: now()) }
        if let json = JSONValue.parse(bytes), case .object = json {
            let words = [json["detail"], json["title"], json["error"], json["message"]].compactMap { $0?.stringValue }.first
            throw .http(status: status, message: Self.clean(words ?? ""), retryAfter: retryAfter)
        }
        // A gateway's own page for a status that means "try later" is still that status.
        if [429, 502, 503, 504].contains(status) || raw || bytes.isEmpty {
            throw .http(status: status, message: bytes.isEmpty ? "" : Self.snippet(bytes), retryAfter: retryAfter)
        }
        throw .notAPI(status: status, snippet: Self.snippet(bytes))
    }

    static func classify(_ error: any Error, timeout: Double) -> JobAPIError {
        if let e = error as? HTTPClientError {
            switch e {
            case .deadlineExceeded, .readTimeout, .writeTimeout: return .timeout(seconds: timeout)
            case .connectTimeout: return .unreachable("connect timed out")
            case .remoteConnectionClosed: return .reset("the server closed the connection")
            default: return .reset("\(e)")
            }
        }
        let text = "\(error)"
        let lower = text.lowercased()
        if lower.contains("refused") || lower.contains("no route") || lower.contains("unreachable")
            || lower.contains("name or service") || lower.contains("nodename") || lower.contains("could not resolve") || lower.contains("connect") && lower.contains("fail") {
            return .unreachable(clean(text))
        }
        if lower.contains("reset") || lower.contains("eof") || lower.contains("closed") || lower.contains("broken pipe") {
            return .reset(clean(text))
        }
        if lower.contains("timeout") || lower.contains("timed out") { return .timeout(seconds: timeout) }
        return .reset(clean(text))
    }

    /// `Retry-After`: seconds, or an HTTP date.
    static func retryAfter(_ value: String, now: Double) -> Double? {
        let v = value.trimmingCharacters(in: .whitespaces)
        if let s = Double(v) { return max(0, s) }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = f.date(from: v) else { return nil }
        return max(0, date.timeIntervalSince1970 - now)
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
