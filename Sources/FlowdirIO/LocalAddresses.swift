#if canImport(Glibc)
import Glibc
#endif

/// This machine's network addresses, and which of them a host name (or
/// address) in a URL stands for: where a receiver for that URL may bind.
public enum LocalAddresses {
    /// Every address of this machine's interfaces, as text (`192.168.1.5`, `fe80::1`).
    public static func all() -> Set<String> {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return [] }
        defer { freeifaddrs(first) }
        var found = Set<String>()
        var next = first
        while let entry = next {
            if let a = entry.pointee.ifa_addr, let text = numeric(a) { found.insert(text) }
            next = entry.pointee.ifa_next
        }
        return found
    }

    /// The addresses `host` resolves to here that are this machine's own,
    /// in the resolver's order; empty when it names another machine (or
    /// cannot be resolved).
    public static func matching(_ host: String) -> [String] {
        let mine = all()
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard getaddrinfo(bare, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var out: [String] = []
        var next = list
        while let entry = next {
            if let a = entry.pointee.ai_addr, let text = numeric(a), mine.contains(text), !out.contains(text) { out.append(text) }
            next = entry.pointee.ai_next
        }
        return out
    }

    /// An IPv4 or IPv6 socket address as numeric text; nil for other families.
    static func numeric(_ address: UnsafeMutablePointer<sockaddr>) -> String? {
        let family = Int32(address.pointee.sa_family)
        guard family == AF_INET || family == AF_INET6 else { return nil }
        let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, length, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
