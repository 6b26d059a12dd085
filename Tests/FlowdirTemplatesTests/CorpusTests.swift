import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import FlowdirTestSupport
import Foundation
import Testing

/// Every invalid template in Fixtures/invalid must produce exactly the error
/// codes it declares; together they cover every code of
/// docs/templates-and-tools.md ("Validation").
@Suite(.tags(.small)) struct CorpusTests {
    @Test func theCorpusIsLargeAndCoversEveryCode() throws {
        #expect(Fixtures.invalidNames.count >= 40)
        var covered = Set<String>()
        for name in Fixtures.invalidNames {
            covered.formUnion(try #require(Fixtures.expectedCodes(name), "\(name) declares no expected codes"))
        }
        let required: [DiagnosticCode] = [
            .cycleDetected, .portTypeMismatch, .unknownNode, .unknownPort, .duplicateNodeId,
            .multiProducerOnRequiredPort, .multiProducerOnOptionalPort, .unboundRequiredPort, .invalidParam,
            .invalidAwait, .invalidResourceClass, .unsupportedSchema, .malformedFile,
        ]
        #expect(Set(required.map(\.rawValue)).subtracting(covered).isEmpty)
    }

    @Test(arguments: Fixtures.invalidNames)
    func eachFixtureReportsExactlyItsCodes(_ name: String) throws {
        let result = Fixtures.load(name)
        let expected = try #require(Fixtures.expectedCodes(name))
        #expect(result.diagnostics.errors.map(\.code.rawValue).sorted() == expected, "\(Fixtures.rendered(result))")
        #expect(!result.isValid)
        // Every error says where it is.
        for d in result.diagnostics.errors { #expect(d.location != nil || d.file != nil) }
    }

    /// Exact rendered text for a representative set, one per kind of
    /// problem. Run with FLOWDIR_UPDATE_SNAPSHOTS=1 to rewrite them after a
    /// deliberate change of wording, and read the diff.
    @Test(arguments: [
        "cycle-three.yaml", "type-mismatch-edge.yaml", "unknown-node-from.yaml", "unknown-port-input.jsonc",
        "duplicate-id-three.json", "multi-producer-optional.yaml", "multi-producer-required.yaml",
        "unbound-required.yaml", "invalid-param-enum.yaml", "invalid-param-range.yaml", "invalid-await-type.yaml",
        "invalid-resource-class.yaml", "unsupported-schema.yaml", "malformed-json-syntax.json",
        "malformed-tab-indent.yaml", "malformed-tool-placeholder.yaml", "malformed-duplicate-key.yaml",
    ])
    func renderedTextIsExact(_ name: String) throws {
        let actual = Fixtures.rendered(Fixtures.load(name))
        let path = Fixtures.directory + "/expected/" + name + ".txt"
        if ProcessInfo.processInfo.environment["FLOWDIR_UPDATE_SNAPSHOTS"] == "1" {
            try actual.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOfFile: path, encoding: .utf8)
        #expect(actual == expected)
    }
}
