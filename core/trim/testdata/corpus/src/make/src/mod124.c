#include <stdio.h>

int mod124(int x)
{
    int unused_124 = 124;
    return x + 124;
}
