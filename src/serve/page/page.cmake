# The page `attnmt serve` answers at GET / (serve/page.h): index.html with page.css and page.js
# inlined, as a string constant in a generated source, so the binary reads no file at run time.
# CMake runs again when one of them changes. The script's and the style's SHA-256 go into the
# page's Content-Security-Policy: no other script (an injected one included) can run in it.
# Sets ATTNMT_PAGE_SOURCE, the generated file.

# base64 of the SHA-256 of `text`, as CSP's 'sha256-...' sources want it.
function(attnmt_sha256_base64 out text)
  string(SHA256 hex "${text}")
  set(alphabet "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
  set(result "")
  foreach(at RANGE 0 54 6)  # 30 of the 32 bytes, 3 at a time -> 4 characters
    string(SUBSTRING "${hex}" ${at} 6 group)
    math(EXPR bits "0x${group}")
    foreach(shift 18 12 6 0)
      math(EXPR index "(${bits} >> ${shift}) & 63")
      string(SUBSTRING "${alphabet}" ${index} 1 c)
      string(APPEND result "${c}")
    endforeach()
  endforeach()
  string(SUBSTRING "${hex}" 60 4 group)  # the last 2 bytes: 16 bits + 2 zero bits -> 3 characters and "="
  math(EXPR bits "0x${group} << 2")
  foreach(shift 12 6 0)
    math(EXPR index "(${bits} >> ${shift}) & 63")
    string(SUBSTRING "${alphabet}" ${index} 1 c)
    string(APPEND result "${c}")
  endforeach()
  set(${out} "${result}=" PARENT_SCOPE)
endfunction()

set(page_dir ${CMAKE_CURRENT_LIST_DIR})
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${page_dir}/index.html ${page_dir}/page.css ${page_dir}/page.js ${page_dir}/page_html.cpp.in)
file(READ ${page_dir}/index.html ATTNMT_PAGE_HTML)
file(READ ${page_dir}/page.css page_css)
file(READ ${page_dir}/page.js page_js)
foreach(part CSS JS)
  if(NOT ATTNMT_PAGE_HTML MATCHES "/\\*@ATTNMT_PAGE_${part}@\\*/")
    message(FATAL_ERROR "src/serve/page/index.html: no /*@ATTNMT_PAGE_${part}@*/ to put page.${part} in")
  endif()
endforeach()
string(REPLACE "/*@ATTNMT_PAGE_CSS@*/" "${page_css}" ATTNMT_PAGE_HTML "${ATTNMT_PAGE_HTML}")
string(REPLACE "/*@ATTNMT_PAGE_JS@*/" "${page_js}" ATTNMT_PAGE_HTML "${ATTNMT_PAGE_HTML}")
if(ATTNMT_PAGE_HTML MATCHES "\\)attnmt_page\"")
  message(FATAL_ERROR "src/serve/page/: the text )attnmt_page\" would end the generated raw string early")
endif()
attnmt_sha256_base64(ATTNMT_PAGE_SCRIPT_SHA256 "${page_js}")
attnmt_sha256_base64(ATTNMT_PAGE_STYLE_SHA256 "${page_css}")
set(ATTNMT_PAGE_SOURCE ${CMAKE_BINARY_DIR}/generated/serve_page_html.cpp)
configure_file(${page_dir}/page_html.cpp.in ${ATTNMT_PAGE_SOURCE} @ONLY)
