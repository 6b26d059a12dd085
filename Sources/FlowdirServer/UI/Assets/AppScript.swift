extension UIAssets {
    static let appJS = ##"""
"""##
}
