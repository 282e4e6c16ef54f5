"""The version of ppdm, in the lowest layer so any module can name it without importing the
package root (which re-exports from the data layer)."""

__version__ = "0.1.0"
