/// The type of a port. `Any` ⊇ `FileRef` ⊇ the media and data refs.
public enum PortType: String, Sendable, CaseIterable, Codable, CustomStringConvertible {
    case any = "Any"
    case file = "FileRef"
    case image = "ImageRef"
    case mask = "MaskRef"
    case depth = "DepthRef"
    case video = "VideoRef"
    case audio = "AudioRef"
    case json = "JSONRef"
    case text = "TextRef"

    public var description: String { rawValue }

    public var parent: PortType? {
        switch self {
        case .any: nil
        case .file: .any
        default: .file
        }
    }

    /// True when a value of this type can be given where `other` is expected.
    public func isSubtype(of other: PortType) -> Bool {
        var current: PortType? = self
        while let type = current {
            if type == other { return true }
            current = type.parent
        }
        return false
    }
}

/// A declared input or output of a node or tool.
public struct PortSpec: Hashable, Sendable {
    public var name: String
    public var type: PortType
    public var optional: Bool
    /// The extension of the path a tool writes for this output (`jpg`), if fixed.
    public var ext: String?
    public var location: SourceLocation?

    public init(name: String, type: PortType, optional: Bool = false, ext: String? = nil,
                location: SourceLocation? = nil) {
        self.name = name
        self.type = type
        self.optional = optional
        self.ext = ext
        self.location = location
    }
}

extension Array where Element == PortSpec {
    public subscript(port name: String) -> PortSpec? { first { $0.name == name } }
}
