import FlowdirCore
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct DiagnosticRendererTests {
    @Test func rendersLocationSourceLineCaretAndHint() {
        let text = "a: 1\n\tkind: Stylze # tab-indented\n"
        let d = Diagnostic.error(.malformedFile, "something is off", at: SourceLocation(file: "t.yaml", line: 2, column: 8), hint: "fix it")
        let out = DiagnosticRenderer(sources: ["t.yaml": text]).render(d)
        #expect(out == """
            t.yaml:2:8: error[malformedFile]: something is off
             2 | \tkind: Stylze # tab-indented
               | \t      ^
              hint: fix it
            """)
    }

    @Test func withoutSourceOrLocation() {
        let d = Diagnostic.warning(.unknownKey, "odd", at: SourceLocation(file: "x.yaml", line: 9, column: 1))
        #expect(DiagnosticRenderer().render(d) == "x.yaml:9:1: warning[unknownKey]: odd")
        let f = Diagnostic.error(.unreadableFile, "gone", file: "y.yaml")
        #expect(DiagnosticRenderer().render(f) == "y.yaml: error[unreadableFile]: gone")
    }

    @Test func colourOnlyWhenAsked() {
        let d = Diagnostic.error(.cycleDetected, "loop", file: "z.yaml")
        #expect(DiagnosticRenderer(useColor: true).render(d) == "z.yaml: \u{1B}[1;31merror[cycleDetected]\u{1B}[0m: loop")
    }
}
