import FlowdirCore
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct PortTypeTests {
    @Test func subtypingFollowsTheHierarchy() {
        let media: [PortType] = [.image, .mask, .depth, .video, .audio, .json, .text]
        for t in media {
            #expect(t.isSubtype(of: t))
            #expect(t.isSubtype(of: .file))
            #expect(t.isSubtype(of: .any))
            #expect(!PortType.file.isSubtype(of: t))
            for other in media where other != t { #expect(!t.isSubtype(of: other)) }
        }
        #expect(PortType.file.isSubtype(of: .any))
        #expect(!PortType.any.isSubtype(of: .file))
    }

    @Test func trimmingWorksOnLoneLineBreaks() {
        #expect("node\n".trimmed() == "node")
        #expect("\r\n  x \t\r\n".trimmed() == "x")
        #expect("--a--".trimmed("-") == "a")
        #expect("é\n".trimmed() == "é")
        #expect(" \t\n ".trimmed() == "")
        #expect("".trimmed() == "")
        #expect(" a → b ".trimmed() == "a → b")
        #expect("  n1.out ".dropFirst().trimmed(" ") == "n1.out")  // a Substring
        #expect("→→a→".trimmed("→") == "a")  // not ASCII: by Unicode scalar
        #expect("\u{00A0}a\u{00A0}".trimmed() == "\u{00A0}a\u{00A0}")  // NBSP is not in the set
    }

    @Test func durationsParseBothForms() {
        #expect(FlowDuration(parsing: "PT24H")?.seconds == 86_400)
        #expect(FlowDuration(parsing: "P1DT2H30M")?.seconds == 95_400)
        #expect(FlowDuration(parsing: "PT0.5S")?.seconds == 0.5)
        #expect(FlowDuration(parsing: "P1W")?.seconds == 604_800)
        #expect(FlowDuration(parsing: "90s")?.seconds == 90)
        #expect(FlowDuration(parsing: "10m")?.seconds == 600)
        #expect(FlowDuration(parsing: "1h")?.seconds == 3_600)
        #expect(FlowDuration(parsing: "2d")?.seconds == 172_800)
        for bad in ["", "P", "PT", "24H", "P1M", "P1Y", "PTH", "-5s", "1x", "P1H"] {
            #expect(FlowDuration(parsing: bad) == nil, "\(bad)")
        }
    }
}
