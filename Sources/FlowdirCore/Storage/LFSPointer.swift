/// A Git LFS pointer (spec v1): what git holds in place of a large file
/// whose content lives in the content store (docs/storage.md).
///
///     version https://git-lfs.github.com/spec/v1
///     oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393
///     size 12345
///
/// Written exactly as git-lfs writes it, so the same content gives the
/// same pointer blob whichever tool made it. Read strictly: a pointer
/// edited by hand into something else is named, never trusted.
public struct LFSPointer: Hashable, Sendable {
    public static let version = "https://git-lfs.github.com/spec/v1"
    /// git-lfs reads no blob larger than this as a pointer.
    public static let maximumLength = 1024

    /// The content's SHA-256, 64 lowercase hex digits.
    public let oid: String
    public let size: Int64
    /// Keys this reader does not know (git-lfs's `ext-N-…`), kept as they
    /// were so a pointer read and written again is the same blob.
    public let extensions: [(key: String, value: String)]

    public init?(oid: String, size: Int64) {
        guard Self.isOID(oid), size >= 0 else { return nil }
        self.oid = oid
        self.size = size
        extensions = []
    }

    private init(oid: String, size: Int64, extensions: [(key: String, value: String)]) {
        self.oid = oid
        self.size = size
        self.extensions = extensions
    }

    public static func == (a: LFSPointer, b: LFSPointer) -> Bool {
        a.oid == b.oid && a.size == b.size && a.extensions.elementsEqual(b.extensions) { $0.key == $1.key && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(oid)
        hasher.combine(size)
    }

    /// The pointer file's bytes.
    public var text: String {
        var lines = ["version " + Self.version]
        // Sorted by key after `version`: `ext-…` comes before `oid`.
        var rest = extensions.map { ($0.key, $0.value) } + [("oid", "sha256:" + oid), ("size", String(size))]
        rest.sort { $0.0 < $1.0 }
        lines += rest.map { $0.0 + " " + $0.1 }
        return lines.joined(separator: "\n") + "\n"
    }

    public var bytes: [UInt8] { Array(text.utf8) }

    /// `.git/lfs/objects/<aa>/<bb>/<oid>`, relative to the git directory.
    public var objectPath: String { Self.objectPath(oid) }

    public static func objectPath(_ oid: String) -> String {
        let u = Array(oid.utf8)
        return "lfs/objects/" + String(decoding: u[0..<2], as: UTF8.self) + "/" + String(decoding: u[2..<4], as: UTF8.self) + "/" + oid
    }

    public static func isOID(_ s: String) -> Bool {
        s.utf8.count == 64 && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// Why some bytes are not a pointer flowdir trusts.
    public enum Problem: Error, Equatable, Sendable, CustomStringConvertible {
        /// Not a pointer at all (an ordinary file).
        case notAPointer
        /// Starts as a pointer but breaks the spec: which line, and how.
        case malformed(String)

        public var description: String {
            switch self {
            case .notAPointer: "not a Git LFS pointer"
            case .malformed(let why): "a broken Git LFS pointer: \(why)"
            }
        }
    }

    /// Whether `bytes` could be a pointer at all: small, and starting with
    /// its first line. Cheap: no allocation.
    public static func looksLikePointer<C: Collection<UInt8>>(_ bytes: C) -> Bool {
        guard bytes.count <= maximumLength else { return false }
        let prefix = "version https://git-lfs"
        return bytes.starts(with: prefix.utf8)
    }

    /// Reads a pointer strictly (the spec's MUSTs, plus a known version,
    /// a sha256 oid of 64 lowercase hex digits and a decimal size without
    /// sign or leading zeros that fits 63 bits).
    public static func parse<C: Collection<UInt8>>(_ bytes: C) -> Result<LFSPointer, Problem> {
        guard looksLikePointer(bytes) else { return .failure(.notAPointer) }
        let bytes = Array(bytes)
        guard bytes.last == 0x0A else { return .failure(.malformed("it does not end with a line break")) }
        // Bytes, not Characters: "\r\n" is one Character, and would pass for a line break.
        guard !bytes.contains(0x0D) else { return .failure(.malformed("it has a carriage return")) }
        guard String(validating: bytes, as: UTF8.self) != nil else { return .failure(.malformed("it is not UTF-8")) }
        let lines = bytes.dropLast().split(separator: 0x0A, omittingEmptySubsequences: false)
        var oid: String?
        var size: Int64?
        var extensions: [(key: String, value: String)] = []
        var previous = ""
        for (i, lineBytes) in lines.enumerated() {
            let n = i + 1
            guard let space = lineBytes.firstIndex(of: 0x20) else { return .failure(.malformed("line \(n) has no `key value`")) }
            let keyBytes = lineBytes[..<space], valueBytes = lineBytes[lineBytes.index(after: space)...]
            guard !keyBytes.isEmpty, keyBytes.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D }) else {
                return .failure(.malformed("line \(n): the key has characters other than a-z, 0-9, '.' and '-'"))
            }
            guard valueBytes.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else { return .failure(.malformed("line \(n) has a control character")) }
            let key = String(decoding: keyBytes, as: UTF8.self), value = String(decoding: valueBytes, as: UTF8.self)
            if i == 0 {
                guard key == "version", value == version else {
                    return .failure(.malformed("line 1 is not `version \(version)`"))
                }
                continue
            }
            guard key > previous || i == 1 else { return .failure(.malformed("line \(n): keys are not in order ('\(key)' after '\(previous)')")) }
            guard key != "version" else { return .failure(.malformed("line \(n): a second `version`")) }
            previous = key
            switch key {
            case "oid":
                guard value.hasPrefix("sha256:"), isOID(String(value.dropFirst(7))) else {
                    return .failure(.malformed("line \(n): the oid is not sha256: and 64 lowercase hex digits"))
                }
                oid = String(value.dropFirst(7))
            case "size":
                guard let s = decimal(value) else {
                    return .failure(.malformed("line \(n): the size '\(value.prefix(40))' is not a whole number of bytes"))
                }
                size = s
            default:
                // Git LFS's extensions (`ext-<priority>-<name>`); any other key is not one flowdir trusts.
                guard key.hasPrefix("ext-") else { return .failure(.malformed("line \(n): '\(key.prefix(40))' is not a key of a Git LFS pointer")) }
                extensions.append((key, value))
            }
        }
        guard let oid else { return .failure(.malformed("it has no oid")) }
        guard let size else { return .failure(.malformed("it has no size")) }
        return .success(LFSPointer(oid: oid, size: size, extensions: extensions))
    }

    /// Digits only, no leading zero (but "0"), at most Int64.max.
    static func decimal(_ s: String) -> Int64? {
        let u = Array(s.utf8)
        guard !u.isEmpty, u.count <= 19, u.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), u.count == 1 || u[0] != 0x30 else { return nil }
        var v: Int64 = 0
        for d in u {
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(Int64(d - 0x30))
            guard !o1, !o2 else { return nil }
            v = a
        }
        return v
    }
}
