// The object the libraries' shared precompiled header is made with (CMakeLists.txt,
// KILN_LIBRARY_UNITY_BUILD): it compiles to nothing.
