#if canImport(Glibc)
import Glibc
#endif
import CLibGit2

/// A pack being built in memory: the objects of one commit, written as one
/// `pack-<sum>.pack` and its version 2 `.idx` (git's pack-format), where
/// loose objects cost four syscalls and a file each. Entries are whole
/// objects, never deltas, so packs can later be merged by copying bytes.
struct PackBuilder {
    struct Entry {
        var id: ObjectID
        var offset: Int
        var crc: UInt32
    }

    /// "PACK", version 2, the object count (filled in at the end), entries.
    private(set) var bytes: [UInt8] = Array("PACK".utf8) + [0, 0, 0, 2, 0, 0, 0, 0]
    private(set) var entries: [Entry] = []
    private var ids: Set<ObjectID> = []

    var isEmpty: Bool { entries.isEmpty }
    func contains(_ id: ObjectID) -> Bool { ids.contains(id) }

    /// Adds an object: `zlib` is the zlib stream of its content (no header).
    mutating func append(_ id: ObjectID, type: git_object_t, size: Int, zlib: [UInt8]) {
        guard ids.insert(id).inserted else { return }
        var entry = Self.header(type: UInt8(type.rawValue), size: size)
        entry += zlib
        append(raw: entry, id: id, crc: Self.crc(entry))
    }

    /// Adds an entry as it was in another pack (header and data), with its CRC.
    mutating func append<Bytes: Collection>(raw entry: Bytes, id: ObjectID, crc: UInt32) where Bytes.Element == UInt8 {
        ids.insert(id)
        entries.append(Entry(id: id, offset: bytes.count, crc: crc))
        bytes += entry
    }

    /// An entry's header: type in bits 4–6 of the first byte, the size in
    /// 4 bits then 7 bits a byte, little-endian, high bit = more follows.
    static func header(type: UInt8, size: Int) -> [UInt8] {
        var out: [UInt8] = []
        var rest = size >> 4
        var byte = (type << 4) | UInt8(size & 15)
        while rest != 0 {
            out.append(byte | 0x80)
            byte = UInt8(rest & 0x7F)
            rest >>= 7
        }
        out.append(byte)
        return out
    }

    static func crc<Bytes: Collection>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        let sum = bytes.withContiguousStorageIfAvailable { crc32(0, $0.baseAddress, uInt($0.count)) }
            ?? Array(bytes).withUnsafeBufferPointer { crc32(0, $0.baseAddress, uInt($0.count)) }
        return UInt32(truncatingIfNeeded: sum)
    }

    /// The pack with its count and checksum, its index, and the checksum's hex (the files' name).
    consuming func finished() -> (pack: [UInt8], index: [UInt8], name: String) {
        var pack = bytes
        bytes = []
        let n = UInt32(entries.count)
        pack.withUnsafeMutableBytes { $0.storeBytes(of: n.bigEndian, toByteOffset: 8, as: UInt32.self) }
        let sum = SHA1.hash(pack)
        pack += sum
        return (pack, Self.index(entries, packSum: sum), sum.map { Self.hexDigits[Int($0 >> 4)] + Self.hexDigits[Int($0 & 15)] }.joined())
    }

    private static let hexDigits = (0..<16).map { String($0, radix: 16) }

    /// Version 2: magic, version, fan-out, sorted names, CRCs, 31-bit
    /// offsets (high bit: an index into the 64-bit table that follows),
    /// the pack's checksum, then the index's own.
    static func index(_ entries: [Entry], packSum: [UInt8]) -> [UInt8] {
        // By id's bytes: the first 16 as two big-endian integers decide all but never-seen ties.
        func key(_ e: Entry) -> (UInt64, UInt64, UInt32) {
            withUnsafeBytes(of: e.id.raw.id) { b in
                (UInt64(bigEndian: b.loadUnaligned(as: UInt64.self)), UInt64(bigEndian: b.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                 UInt32(bigEndian: b.loadUnaligned(fromByteOffset: 16, as: UInt32.self)))
            }
        }
        let sorted = entries.map { (key($0), $0) }.sorted { $0.0 < $1.0 }.map(\.1)
        var out: [UInt8] = [0xFF, 0x74, 0x4F, 0x63, 0, 0, 0, 2]
        out.reserveCapacity(8 + 1024 + sorted.count * 28 + 40)
        var fanout = [UInt32](repeating: 0, count: 256)
        for e in sorted { fanout[Int(e.id.raw.id.0)] += 1 }
        var running: UInt32 = 0
        for i in 0..<256 {
            running += fanout[i]
            out += be32(running)
        }
        for e in sorted { withUnsafeBytes(of: e.id.raw.id) { out += $0 } }
        for e in sorted { out += be32(e.crc) }
        var large: [UInt64] = []
        for e in sorted {
            if e.offset < 0x8000_0000 {
                out += be32(UInt32(e.offset))
            } else {
                out += be32(0x8000_0000 | UInt32(large.count))
                large.append(UInt64(e.offset))
            }
        }
        for o in large { out += be32(UInt32(o >> 32)) + be32(UInt32(truncatingIfNeeded: o)) }
        out += packSum
        out += SHA1.hash(out)
        return out
    }

    static func be32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
    }
}

/// A pack read back for merging: its entries by offset, if every one is a
/// whole object (a pack git made, with deltas, is left alone).
struct PackContents {
    var bytes: [UInt8]
    /// (id, start, end, crc), in pack order.
    var entries: [(id: ObjectID, start: Int, end: Int, crc: UInt32)]

    init?(pack: [UInt8], index: [UInt8]) {
        func be32(_ b: [UInt8], _ at: Int) -> UInt32 {
            UInt32(b[at]) << 24 | UInt32(b[at + 1]) << 16 | UInt32(b[at + 2]) << 8 | UInt32(b[at + 3])
        }
        guard index.count >= 8 + 1024 + 40, index.prefix(8).elementsEqual([0xFF, 0x74, 0x4F, 0x63, 0, 0, 0, 2]),
              pack.count >= 32, pack.prefix(8).elementsEqual(Array("PACK".utf8) + [0, 0, 0, 2]) else { return nil }
        let n = Int(be32(index, 8 + 255 * 4))
        let names = 8 + 1024, crcs = names + 20 * n, offsets = crcs + 4 * n, large = offsets + 4 * n
        guard index.count >= large + 40, Int(be32(pack, 8)) == n else { return nil }
        var list: [(id: ObjectID, start: Int, end: Int, crc: UInt32)] = []
        list.reserveCapacity(n)
        for i in 0..<n {
            var oid = git_oid()
            withUnsafeMutableBytes(of: &oid.id) { $0.copyBytes(from: index[(names + 20 * i)..<(names + 20 * i + 20)]) }
            var offset = Int(be32(index, offsets + 4 * i))
            if offset & 0x8000_0000 != 0 {
                let at = large + 8 * (offset & 0x7FFF_FFFF)
                guard index.count >= at + 8 + 40 else { return nil }
                offset = Int(be32(index, at)) << 32 | Int(be32(index, at + 4))
            }
            guard offset >= 12, offset < pack.count - 20 else { return nil }
            list.append((ObjectID(oid), offset, 0, be32(index, crcs + 4 * i)))
        }
        list.sort { $0.start < $1.start }
        for i in list.indices {
            list[i].end = i + 1 < list.count ? list[i + 1].start : pack.count - 20
            // Types 1–4 are whole objects; 6 and 7 are deltas against others.
            let type = (pack[list[i].start] >> 4) & 7
            guard (1...4).contains(type) else { return nil }
        }
        bytes = pack
        entries = list
    }
}
