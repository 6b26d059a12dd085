#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NIOPosix

/// An IP address, as far as deciding where a webhook may go needs it.
enum NetAddress: Equatable, CustomStringConvertible {
    case v4(UInt32)
    /// 16 bytes.
    case v6([UInt8])

    /// An address literal (`10.0.0.7`, `::1`, `[fe80::1]`); nil for a name.
    init?(_ text: String) {
        var t = text
        if t.hasPrefix("["), t.hasSuffix("]") { t = String(t.dropFirst().dropLast()) }
        // A zone (`fe80::1%eth0`) says which link, not which address.
        if t.contains(":"), let zone = t.firstIndex(of: "%") { t = String(t[..<zone]) }
        var a4 = in_addr()
        if inet_pton(AF_INET, t, &a4) == 1 {
            self = .v4(UInt32(bigEndian: a4.s_addr))
            return
        }
        var a6 = in6_addr()
        guard inet_pton(AF_INET6, t, &a6) == 1 else { return nil }
        self = .v6(withUnsafeBytes(of: &a6) { Array($0) })
    }

    /// An IPv4 address inside an IPv6 one (`::ffff:a.b.c.d`, NAT64
    /// `64:ff9b::a.b.c.d`) as the IPv4 address it reaches.
    var unwrapped: NetAddress {
        guard case .v6(let b) = self else { return self }
        let mapped = b[0..<10].allSatisfy { $0 == 0 } && b[10] == 0xFF && b[11] == 0xFF
        let nat64 = b[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0][...]
        guard mapped || nat64 else { return self }
        return .v4(UInt32(b[12]) << 24 | UInt32(b[13]) << 16 | UInt32(b[14]) << 8 | UInt32(b[15]))
    }

    enum Kind: Equatable { case ordinary, loopback, linkLocal, metadata, multicast, unspecified, reserved }

    var kind: Kind {
        switch unwrapped {
        case .v4(let a):
            if a >> 24 == 127 { return .loopback }
            if a >> 24 == 0 { return .unspecified }
            if a >> 16 == 0xA9FE { return .linkLocal }  // 169.254/16: cloud metadata lives here
            if a >> 28 == 0xE { return .multicast }
            if a >> 28 == 0xF { return .reserved }  // 240/4 and the broadcast address
            return .ordinary
        case .v6(let b):
            if b.allSatisfy({ $0 == 0 }) { return .unspecified }
            if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return .loopback }
            if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return .linkLocal }
            if b[0] == 0xFF { return .multicast }
            // fd00:ec2::254, the cloud metadata service's IPv6 address.
            if b == [0xFD, 0x00, 0x0E, 0xC2] + Array(repeating: 0, count: 10) + [0x02, 0x54] { return .metadata }
            return .ordinary
        }
    }

    var description: String {
        switch self {
        case .v4(let a): return "\(a >> 24).\(a >> 16 & 0xFF).\(a >> 8 & 0xFF).\(a & 0xFF)"
        case .v6(var b):
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let ok = b.withUnsafeMutableBytes { inet_ntop(AF_INET6, $0.baseAddress, &text, socklen_t(text.count)) } != nil
            return ok ? String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        }
    }

    /// As the host of a URL (`[…]` around IPv6).
    var urlHost: String {
        if case .v6 = self { return "[\(description)]" }
        return description
    }
}

/// Where a prediction's webhook may go (docs/security.md): http or https
/// only, never a link-local address (cloud metadata), multicast or an
/// unspecified one, and loopback only when the job server itself listens
/// on loopback only. LAN and private addresses are allowed: a laptop on
/// the LAN is the usual receiver. Checked on the URL when a prediction is
/// made, and on the addresses its host resolves to when each call is made
/// (a name may point elsewhere by then).
struct WebhookTarget: Sendable {
    var scheme: String
    var host: String
    var port: Int
    /// Path and query, as given.
    var rest: String

    struct Refused: Error, CustomStringConvertible {
        var description: String
    }

    static func parse(_ url: String, allowLoopback: Bool) throws(Refused) -> WebhookTarget {
        guard url.count <= 2048, let u = URLComponents(string: url), let scheme = u.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = u.host, !host.isEmpty else {
            throw Refused(description: "`webhook` must be an http(s) URL with a host")
        }
        guard u.user == nil, u.password == nil else { throw Refused(description: "`webhook` must not carry a user or password") }
        let port = u.port ?? (scheme == "https" ? 443 : 80)
        guard (1...65535).contains(port) else { throw Refused(description: "`webhook` has no valid port") }
        let target = WebhookTarget(scheme: scheme, host: host.lowercased(), port: port,
                                   rest: (u.percentEncodedPath.isEmpty ? "/" : u.percentEncodedPath) + (u.percentEncodedQuery.map { "?" + $0 } ?? ""))
        var name = target.host
        while name.hasSuffix(".") { name.removeLast() }
        if name == "localhost" || name.hasSuffix(".localhost") {
            if !allowLoopback { throw refusal(target.host, .loopback) }
        } else if let literal = numeric(target.host) {
            try check(literal, name: target.host, allowLoopback: allowLoopback)
        }
        return target
    }

    static func check(_ address: NetAddress, name: String, allowLoopback: Bool) throws(Refused) {
        let kind = address.kind
        if kind == .ordinary || (kind == .loopback && allowLoopback) { return }
        throw refusal(name == address.description ? name : "\(name) (\(address))", kind)
    }

    static func refusal(_ what: String, _ kind: NetAddress.Kind) -> Refused {
        let why = switch kind {
        case .loopback: "a loopback address, and this job server listens beyond this machine"
        case .linkLocal: "a link-local address (where cloud metadata services answer)"
        case .metadata: "the cloud metadata service's address"
        case .multicast: "a multicast address"
        case .unspecified: "an unspecified address"
        case .reserved: "a reserved or broadcast address"
        case .ordinary: "allowed"
        }
        return Refused(description: "webhooks are not sent to \(what): \(why)")
    }

    /// An address written as one, in any form the resolver takes as one
    /// (`127.1`, `2130706433`, `0x7f.1` are 127.0.0.1), without a lookup.
    static func numeric(_ host: String) -> NetAddress? {
        if let a = NetAddress(host) { return a }
        guard host.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == "x" || $0 == "X" }) else { return nil }
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST
        hints.ai_family = AF_INET
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(first) }
        guard let sa = first.pointee.ai_addr else { return nil }
        return .v4(UInt32(bigEndian: sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }))
    }

    /// The addresses the host has now, every one of them allowed.
    func resolve(allowLoopback: Bool) async throws(Refused) -> [NetAddress] {
        if let literal = Self.numeric(host) {
            try Self.check(literal, name: host, allowLoopback: allowLoopback)
            return [literal]
        }
        let host = self.host
        let found: Result<[NetAddress], Refused>
        do {
            found = try await NIOThreadPool.singleton.runIfActive { Self.lookUp(host) }
        } catch {
            throw Refused(description: "cannot look up \(host): \(error)")
        }
        let addresses = try found.get()
        for a in addresses { try Self.check(a, name: host, allowLoopback: allowLoopback) }
        return addresses
    }

    /// getaddrinfo(3), which blocks: on a thread of its own.
    static func lookUp(_ host: String) -> Result<[NetAddress], Refused> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0, let first = list else {
            return .failure(Refused(description: "cannot look up \(host): \(String(cString: gai_strerror(rc)))"))
        }
        defer { freeaddrinfo(first) }
        var out: [NetAddress] = []
        var p: UnsafeMutablePointer<addrinfo>? = first
        while let ai = p?.pointee {
            if ai.ai_family == AF_INET, let sa = ai.ai_addr {
                let a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                out.append(.v4(UInt32(bigEndian: a)))
            } else if ai.ai_family == AF_INET6, let sa = ai.ai_addr {
                var a = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                out.append(.v6(withUnsafeBytes(of: &a) { Array($0) }))
            }
            p = ai.ai_next
        }
        guard !out.isEmpty else { return .failure(Refused(description: "\(host) has no address")) }
        return .success(out)
    }

    /// The URL to connect to and the Host header to send: plain http goes
    /// to the address that was checked (a name cannot be made to point
    /// elsewhere between the check and the call); https by name, whose
    /// certificate an internal service could not show.
    func request(to address: NetAddress) -> (url: String, host: String?) {
        let defaultPort = scheme == "https" ? 443 : 80
        let shownHost = NetAddress(host)?.urlHost ?? host
        let authority = port == defaultPort ? shownHost : "\(shownHost):\(port)"
        if scheme == "https" { return ("https://\(NetAddress(host)?.urlHost ?? host):\(port)\(rest)", nil) }
        return ("http://\(address.urlHost):\(port)\(rest)", authority)
    }
}
