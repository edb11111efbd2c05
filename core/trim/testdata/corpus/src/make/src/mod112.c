#include <stdio.h>

int mod112(int x)
{
    int unused_112 = 112;
    return x + 112;
}
