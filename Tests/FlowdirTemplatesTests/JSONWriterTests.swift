import FlowdirCore
import FlowdirTemplates
import FlowdirTestSupport
import Foundation
import Testing

/// `JSONWriter` stays (its comment says why); Foundation reads every text
/// it writes as the value written.
@Suite(.tags(.small)) struct JSONWriterTests {
    @Test func keepsTheDeclaredOrderAndSpacing() {
        let params = ParamValue.object([ParamEntry(key: "width", value: .int(800)), ParamEntry(key: "quality", value: .int(85)),
                                        ParamEntry(key: "alpha", value: .array([.bool(true), .null, .double(0.5)]))])
        #expect(JSONWriter.text(params) == #"{"width": 800, "quality": 85, "alpha": [true, null, 0.5]}"#)
        #expect(JSONWriter.text(.string("a/b\u{8}\"")) == #""a/b\u0008\"""#)
    }

    @Test func foundationReadsWhatItWrites() throws {
        var rng = SplitMix(seed: 5)
        for _ in 0..<2_000 {
            let value = Self.value(&rng, depth: 3)
            let text = JSONWriter.text(value)
            let read = try JSONDecoder().decode(Tree.self, from: Data(text.utf8))
            #expect(read == Tree(value), "\(text)")
        }
    }

    /// Every control character, quotes, backslashes, and text beyond ASCII.
    static let scalars: [Unicode.Scalar] = (0..<0x80).compactMap(Unicode.Scalar.init) + ["é", "€", "😀", "\u{2028}", "\u{FEFF}"]

    static func value(_ rng: inout SplitMix, depth: Int) -> ParamValue {
        switch rng.next() % (depth > 0 ? 8 : 6) {
        case 0: return .null
        case 1: return .bool(rng.next() % 2 == 0)
        case 2: return .int(Int(truncatingIfNeeded: rng.next()) >> Int(rng.next() % 64))
        case 3: return .double(Double(Int64(bitPattern: rng.next()) % 1_000_000_000) / 1024)
        case 4, 5: return .string(string(&rng))
        case 6: return .array((0..<rng.next() % 4).map { _ in value(&rng, depth: depth - 1) })
        default:
            var keys: Set<String> = []
            var entries: [ParamEntry] = []
            for _ in 0..<rng.next() % 4 {
                let key = string(&rng)
                if keys.insert(key).inserted { entries.append(ParamEntry(key: key, value: value(&rng, depth: depth - 1))) }
            }
            return .object(entries)
        }
    }

    static func string(_ rng: inout SplitMix) -> String {
        var s = ""
        for _ in 0..<rng.next() % 12 { s.unicodeScalars.append(scalars[Int(rng.next() % UInt64(scalars.count))]) }
        return s
    }

    /// A JSON value as Foundation reads it: numbers as Doubles, objects by key.
    indirect enum Tree: Decodable, Equatable {
        case null, bool(Bool), number(Double), string(String), array([Tree]), object([String: Tree])

        init(_ v: ParamValue) {
            switch v {
            case .null: self = .null
            case .bool(let b): self = .bool(b)
            case .int(let i): self = .number(Double(i))
            case .double(let d): self = .number(d)
            case .string(let s): self = .string(s)
            case .array(let items): self = .array(items.map(Tree.init))
            case .object(let entries): self = .object(Dictionary(uniqueKeysWithValues: entries.map { ($0.key, Tree($0.value)) }))
            }
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if c.decodeNil() { self = .null }
            else if let b = try? c.decode(Bool.self) { self = .bool(b) }
            else if let d = try? c.decode(Double.self) { self = .number(d) }
            else if let s = try? c.decode(String.self) { self = .string(s) }
            else if let a = try? c.decode([Tree].self) { self = .array(a) }
            else { self = .object(try c.decode([String: Tree].self)) }
        }
    }
}
