#include <stdio.h>

int mod038(int x)
{
    int unused_38 = 38;
    return x + 38;
}
