/// A compact binary form for what flowdir caches for itself (never for
/// people, never committed): LEB128 integers, and each distinct string once,
/// in a table ahead of the body, so that reading gives every node that names
/// the same kind or port one shared string.
///
/// Paths under `base` (the folder a cache describes) are written relative
/// to it and read back under the reader's: the same folder named another
/// way (`inst`, `/home/me/inst`), or moved, reads the same.
public struct BinaryWriter {
    private var body: [UInt8] = []
    private var table: [String] = []
    private var numbers: [String: Int] = [:]
    private let base: String?

    public init(base: String? = nil) { self.base = base.map(BinaryReader.trimmed) }

    public mutating func uint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            body.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        body.append(UInt8(v))
    }

    /// Zigzag, so that small negative numbers stay short.
    public mutating func int(_ v: Int) { uint(UInt64(bitPattern: Int64((v << 1) ^ (v >> (Int.bitWidth - 1))))) }
    public mutating func bool(_ b: Bool) { body.append(b ? 1 : 0) }
    public mutating func double(_ d: Double) { uint(d.bitPattern) }

    public mutating func string(_ s: String) {
        if let n = numbers[s] { return uint(UInt64(n)) }
        numbers[s] = table.count
        uint(UInt64(table.count))
        table.append(s)
    }

    public mutating func path(_ p: String) {
        if let base, p == base || p.hasPrefix(base + "/") {
            bool(true)
            string(String(p.dropFirst(base.count)))
        } else {
            bool(false)
            string(p)
        }
    }

    /// Bytes kept as they are, after their length.
    public mutating func bytes(_ b: some Collection<UInt8>) {
        uint(UInt64(b.count))
        body.append(contentsOf: b)
    }

    public mutating func optional<T>(_ value: T?, _ write: (inout BinaryWriter, T) -> Void) {
        bool(value != nil)
        if let value { write(&self, value) }
    }

    public mutating func array<T>(_ items: [T], _ write: (inout BinaryWriter, T) -> Void) {
        uint(UInt64(items.count))
        for item in items { write(&self, item) }
    }

    /// The string table, then the body.
    public func finish() -> [UInt8] {
        var head = BinaryWriter()
        head.uint(UInt64(table.count))
        for s in table { head.bytes(s.utf8) }
        return head.body + body
    }
}

/// Reads what `BinaryWriter` wrote. Every read is bounds-checked: a cut or
/// damaged file is `Malformed`, never a crash.
public struct BinaryReader {
    public struct Malformed: Error, Sendable {}

    private let data: ArraySlice<UInt8>
    private var at: Int
    private var table: [String] = []
    private let base: String
    /// `base` + each relative path, made once.
    private var rebased: [String?] = []

    public init(_ bytes: ArraySlice<UInt8>, base: String = "") throws(Malformed) {
        data = bytes
        at = bytes.startIndex
        self.base = Self.trimmed(base)
        let count = try self.count()
        table.reserveCapacity(count)
        for _ in 0..<count { table.append(String(decoding: try self.bytes(), as: UTF8.self)) }
    }

    public var isAtEnd: Bool { at == data.endIndex }

    public mutating func uint() throws(Malformed) -> UInt64 {
        var v: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard at < data.endIndex, shift < 64 else { throw Malformed() }
            let b = data[at]
            at += 1
            v |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return v }
            shift += 7
        }
    }

    public mutating func int() throws(Malformed) -> Int {
        let u = try uint()
        return Int(Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1))))
    }

    public mutating func bool() throws(Malformed) -> Bool {
        guard at < data.endIndex, data[at] <= 1 else { throw Malformed() }
        defer { at += 1 }
        return data[at] == 1
    }

    public mutating func double() throws(Malformed) -> Double { Double(bitPattern: try uint()) }

    public mutating func string() throws(Malformed) -> String {
        let n = try uint()
        guard n < UInt64(table.count) else { throw Malformed() }
        return table[Int(n)]
    }

    public mutating func path() throws(Malformed) -> String {
        guard try bool() else { return try string() }
        let n = try uint()
        guard n < UInt64(table.count) else { throw Malformed() }
        if rebased.isEmpty { rebased = Array(repeating: nil, count: table.count) }
        if let made = rebased[Int(n)] { return made }
        let made = base + table[Int(n)]
        rebased[Int(n)] = made
        return made
    }

    static func trimmed(_ base: String) -> String {
        base.count > 1 && base.hasSuffix("/") ? String(base.dropLast()) : base
    }

    public mutating func bytes() throws(Malformed) -> ArraySlice<UInt8> {
        let n = try count()
        defer { at += n }
        return data[at..<at + n]
    }

    /// A length or a count, no more than the bytes left could hold.
    public mutating func count() throws(Malformed) -> Int {
        let n = try uint()
        guard n <= UInt64(data.endIndex - at) else { throw Malformed() }
        return Int(n)
    }

    public mutating func optional<T>(_ read: (inout BinaryReader) throws(Malformed) -> T) throws(Malformed) -> T? {
        try bool() ? try read(&self) : nil
    }

    public mutating func array<T>(_ read: (inout BinaryReader) throws(Malformed) -> T) throws(Malformed) -> [T] {
        let n = try count()
        var out: [T] = []
        out.reserveCapacity(n)
        for _ in 0..<n { out.append(try read(&self)) }
        return out
    }

    /// A value of a `RawRepresentable` enum written by its raw string.
    public mutating func raw<T: RawRepresentable>(_: T.Type) throws(Malformed) -> T where T.RawValue == String {
        guard let v = T(rawValue: try string()) else { throw Malformed() }
        return v
    }
}
